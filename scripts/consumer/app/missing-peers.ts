console.log('missing peers: not yet');

/**
 * Preloaded (NODE_OPTIONS=--require) into a worker: `mysql2` cannot be resolved, as
 * in an app that did not install it.
 */
const Module = require('node:module');

const resolve = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  if (request === 'mysql2' || request.startsWith('mysql2/')) {
    const error = new Error(`Cannot find module '${request}' (hidden by hide-mysql2.js)`);
    error.code = 'MODULE_NOT_FOUND';
    throw error;
  }
  return resolve.call(this, request, ...rest);
};

/**
 * jest's node environment, plus one thing: it tells test/setup/quiet-logs.ts when a
 * test (or a hook) failed, so that test's buffered Nest log is printed, and drops the
 * log of a test that passed.
 */
const { TestEnvironment } = require('jest-environment-node');

function titleOf(test) {
  const names = [];
  for (let block = test; block && block.name !== 'ROOT_DESCRIBE_BLOCK'; block = block.parent) names.unshift(block.name);
  return `"${names.join(' › ')}"`;
}

class QuietEnvironment extends TestEnvironment {
  async handleTestEvent(event) {
    const logs = this.global.__nestLogs;
    if (!logs) return;
    if (event.name === 'test_done') {
      if (event.test.errors.length > 0) logs.flush(titleOf(event.test));
      else logs.clear();
    } else if (event.name === 'hook_failure') {
      logs.flush(
        `the ${event.hook.type} hook of ${event.hook.parent.name === 'ROOT_DESCRIBE_BLOCK' ? 'the file' : `"${event.hook.parent.name}"`}`,
      );
    }
  }
}

module.exports = QuietEnvironment;

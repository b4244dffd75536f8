/**
 * Preloaded (NODE_OPTIONS=--require) into a worker: `@opentelemetry/api` and
 * `@nestjs/terminus` cannot be resolved, as in an app that did not install them.
 */
const Module = require('node:module');

const HIDDEN = ['@opentelemetry/api', '@nestjs/terminus'];
const resolve = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  if (HIDDEN.some((name) => request === name || request.startsWith(`${name}/`))) {
    const error = new Error(`Cannot find module '${request}' (hidden by hide-optional-peers.js)`);
    error.code = 'MODULE_NOT_FOUND';
    throw error;
  }
  return resolve.call(this, request, ...rest);
};

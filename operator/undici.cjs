'use strict';
// What the operator's bundle gets for `import ... from 'undici'` (operator/bundle.ts aliases the
// package to this file, for client-node's imports as for ours): the classes and the request API
// from undici's own modules, without its index. The index loads every part of undici (fetch, the
// WebSocket and EventSource clients, the cache, the mocks) at start, about 3 MiB of idle RSS the
// operator never uses (docs/measure/benchmarks.md). What this exports is undici's own code; only
// `request` is written here, as undici's index writes it for a URL string. Every name a bundled
// module imports from 'undici' must be here: test/unit/operator-bundle.test.ts checks them.
const Dispatcher = require('undici/lib/dispatcher/dispatcher');
const api = require('undici/lib/api');
const Agent = require('undici/lib/dispatcher/agent');
const ProxyAgent = require('undici/lib/dispatcher/proxy-agent');
const buildConnector = require('undici/lib/core/connect');

// As undici's index does: dispatcher.request(), .stream() and the rest come from its API modules.
Object.assign(Dispatcher.prototype, api);

/** undici's request(url, options) for a URL string, on `options.dispatcher` (else undici's global one). */
function request(url, { dispatcher, ...options } = {}) {
  const { origin, pathname, search } = new URL(url);
  return (dispatcher ?? require('undici/lib/global').getGlobalDispatcher()).request({
    ...options,
    origin,
    path: `${pathname}${search}`,
    method: options.method ?? (options.body ? 'PUT' : 'GET'),
  });
}

/** client-node's fetch-based API clients import fetch; the operator does not call them. Loaded whole on first use. */
function fetch(...args) {
  return import('undici').then((undici) => undici.fetch(...args));
}

module.exports = { Agent, ProxyAgent, buildConnector, request, fetch };

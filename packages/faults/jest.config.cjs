// The fault suite starts its own Postgres and Redis: none of core's embedded-Postgres setup.
// Its files run one at a time (each owns a cluster, a Redis and four services; two cores).
const { globalSetup: _setup, globalTeardown: _teardown, ...preset } = require('@quartet/core/jest-preset')

module.exports = {
  ...preset,
  displayName: 'faults',
  maxWorkers: 1,
  testTimeout: 300_000,
}

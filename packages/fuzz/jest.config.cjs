// The fuzz suite runs the four built services against a Postgres cluster and a Redis of its own
// (packages/faults' stack): none of core's embedded-Postgres setup.
const { globalSetup: _setup, globalTeardown: _teardown, ...preset } = require('@quartet/core/jest-preset')

module.exports = {
  ...preset,
  displayName: 'fuzz',
  maxWorkers: 1,
  testTimeout: 600_000,
}

/**
 * The jest setup every package shares: TypeScript through SWC, Node environment, an embedded
 * Postgres when DATABASE_URL is unset, and no network beyond loopback.
 */
const path = require('node:path')

module.exports = {
  testEnvironment: 'node',
  testMatch: ['<rootDir>/test/**/*.test.ts'],
  transform: {
    '^.+\\.(t|j|mj|cj)sx?$': [
      require.resolve('@swc/jest'),
      {
        jsc: { target: 'es2022', parser: { syntax: 'typescript' } },
        module: { type: 'commonjs' },
      },
    ],
  },
  // ESM-only dependencies must go through SWC too.
  transformIgnorePatterns: ['/node_modules/(?!(\\.pnpm/)?(@electric-sql)).+\\.js$'],
  moduleFileExtensions: ['ts', 'js', 'mjs', 'cjs', 'json'],
  globalSetup: path.join(__dirname, 'src/testing-global-setup.ts'),
  globalTeardown: path.join(__dirname, 'src/testing-global-teardown.ts'),
  setupFiles: [path.join(__dirname, 'src/testing-network-guard.ts')],
  testTimeout: 30_000,
  // A worker that has grown heavy over many files is replaced, so later files (and the forced
  // collections memory tests make) do not pay for what earlier files left behind.
  workerIdleMemoryLimit: '768MB',
}

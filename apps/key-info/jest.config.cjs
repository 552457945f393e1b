const preset = require('@quartet/core/jest-preset')

module.exports = {
  ...preset,
  displayName: 'key-info',
  // The official OpenRouter SDK (test/integration/sdk.test.ts) ships ESM only: SWC compiles it too.
  transformIgnorePatterns: ['/node_modules/(?!(\\.pnpm/)?(@electric-sql|@openrouter)).+\\.js$'],
}

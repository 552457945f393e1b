const preset = require('@quartet/core/jest-preset')

module.exports = {
  ...preset,
  displayName: 'dns-manager',
  // graphql-request (the stock client graphql.clients.test.ts drives) is ESM only: SWC makes it
  // CommonJS, as the preset does for @electric-sql.
  transformIgnorePatterns: ['/node_modules/(?!(\\.pnpm/)?(@electric-sql|graphql-request)).+\\.js$'],
}

const preset = require('@quartet/core/jest-preset')

module.exports = {
  ...preset,
  displayName: 'pickup-share',
  // tus (server, stores, srvx) and the Vercel blob client ship ES modules only: SWC compiles them too.
  transformIgnorePatterns: [
    '/node_modules/(?!(\\.pnpm/)?(@electric-sql|@tus|srvx|tus-js-client|@vercel|undici))[^/]+/.+\\.js$',
  ],
}

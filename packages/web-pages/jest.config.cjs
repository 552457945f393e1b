// The shared page code is plain functions and Preact components: SWC compiles it (TSX with
// Preact's JSX), and it runs in Node, which has fetch's Response and Headers and Intl with every
// locale. The pages' behaviour in a browser is proven by the apps' test/browser suites.
module.exports = {
  displayName: 'web-pages',
  testEnvironment: 'node',
  testMatch: ['<rootDir>/test/**/*.test.ts', '<rootDir>/test/**/*.test.tsx'],
  transform: {
    '^.+\\.(t|j|mj)sx?$': [
      require.resolve('@swc/jest'),
      {
        jsc: {
          target: 'es2022',
          parser: { syntax: 'typescript', tsx: true },
          transform: { react: { runtime: 'automatic', importSource: 'preact' } },
        },
        module: { type: 'commonjs' },
      },
    ],
  },
  // Preact ships ES modules only: SWC makes them CommonJS too.
  transformIgnorePatterns: ['/node_modules/(?!(\\.pnpm/)?preact)'],
  moduleFileExtensions: ['ts', 'tsx', 'js', 'mjs', 'cjs', 'json'],
}

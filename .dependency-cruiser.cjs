// The import rules docs/ARCHITECTURE.md describes, checked by `pnpm lint:deps` (part of `pnpm lint`
// and of `pnpm test`). A rule here fails the build; the reason in each `comment` is what the
// report prints.

/** Each app's own folder, captured so a rule can say "the same app" ($1). */
const APP = '^apps/([^/]+)/'

module.exports = {
  forbidden: [
    {
      name: 'no-cycle',
      severity: 'error',
      comment:
        'An import cycle: the files in it can only be understood, tested and loaded together. ' +
        'Move the shared type to where it belongs, invert the dependency through a port, or split the file.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'domain-not-to-framework',
      severity: 'error',
      comment:
        'The domain (use cases and their ports) knows nothing of HTTP or the database: ' +
        'express and Prisma are reached through a port that src/http or src/store implements.',
      from: { path: `${APP}src/domain/` },
      to: {
        path: [
          '(^|/)node_modules/(express|@types/express|@prisma/|\\.prisma/|prisma)/',
          `${APP}src/generated/`,
        ],
      },
    },
    {
      name: 'domain-not-to-adapters',
      severity: 'error',
      comment:
        'The domain does not import its adapters: src/store implements the ports in src/domain, ' +
        'src/http calls the use cases; the composition root (src/app.ts) wires them together.',
      from: { path: `${APP}src/domain/` },
      to: { path: [`${APP}src/(store|drivers|http)/`, `${APP}src/(app|main|cli)\\.ts$`] },
    },
    {
      name: 'prisma-only-in-store',
      severity: 'error',
      comment:
        "Only an app's src/store (its repositories) and its composition root import Prisma or the app's " +
        'generated client; everything else works with the plain objects the repositories return.',
      from: {
        path: '^apps/[^/]+/src/',
        pathNot: ['^apps/[^/]+/src/(store|generated)/', '^apps/[^/]+/src/app\\.ts$'],
      },
      to: { path: ['(^|/)node_modules/(@prisma/|\\.prisma/|prisma/)', '^apps/[^/]+/src/generated/'] },
    },
    {
      name: 'app-not-to-other-app',
      severity: 'error',
      comment: 'Apps are deployed apart: what two apps share belongs in packages/core, not in either app.',
      from: { path: '^apps/([^/]+)/' },
      to: { path: '^apps/([^/]+)/', pathNot: '^apps/$1/' },
    },
    {
      name: 'package-not-to-app',
      severity: 'error',
      comment:
        'Packages sit below the apps: a package that imports an app ties every app to that one. ' +
        'Suites that test the apps drive the built services over HTTP (or by process) instead.',
      from: { path: '^packages/' },
      to: { path: '^apps/' },
    },
  ],
  options: {
    // Type-only imports count: a type cycle or a Prisma type in the domain ties the layers just
    // as a value import does.
    tsPreCompilationDeps: true,
    // The generated Prisma clients are not cruised, but imports of them are seen (and ruled on).
    doNotFollow: { path: ['node_modules', '^apps/[^/]+/src/generated/'] },
    // Build output (dist/, the web bundles under it), coverage and local data are not source.
    exclude: { path: ['^(apps|packages)/[^/]+/(dist|coverage)/', '(^|/)\\.data/'] },
    moduleSystems: ['es6', 'cjs'],
    tsConfig: { fileName: 'tsconfig.base.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      extensions: ['.ts', '.tsx', '.mts', '.cts', '.js', '.mjs', '.cjs', '.d.ts'],
      mainFields: ['module', 'main', 'types'],
    },
    reporterOptions: {
      text: { highlightFocused: true },
    },
  },
}

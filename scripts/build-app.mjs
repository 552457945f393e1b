#!/usr/bin/env node
// Bundles an app's entry points (src/main.ts, src/cli.ts) with @quartet/core and every dependency
// into dist/, so a container needs dist/ and prisma/migrations/ but no node_modules.
import { build } from 'esbuild'
import { existsSync, rmSync } from 'node:fs'
import path from 'node:path'

const appDir = process.cwd()
const entryPoints = ['src/main.ts', 'src/cli.ts'].filter((f) => existsSync(path.join(appDir, f)))
rmSync(path.join(appDir, 'dist'), { recursive: true, force: true })
await build({
  entryPoints,
  outdir: 'dist',
  bundle: true,
  platform: 'node',
  target: 'node20.19',
  format: 'cjs',
  sourcemap: 'linked',
  // Maps point at the sources in the repository instead of carrying them: with
  // --enable-source-maps (the launcher's) node parses the whole map at start, and the embedded
  // sources made that ~50 MB more heap per service (bench/memory).
  sourcesContent: false,
  legalComments: 'linked',
  logLevel: 'warning',
  // Optional native add-ons and dev-only embedded Postgres are never part of a service bundle.
  external: ['pg-native', '@electric-sql/pglite'],
})
console.log(`built ${entryPoints.join(', ')} → dist/`)

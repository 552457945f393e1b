#!/usr/bin/env node
// Bundles an app's entry points (src/main.ts, src/cli.ts) with @quartet/core and every dependency
// into dist/, so a container needs dist/ and prisma/migrations/ but no node_modules.
import { build } from 'esbuild'
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { builtinModules, createRequire } from 'node:module'
import path from 'node:path'

/**
 * Prisma's query compiler ships as a JS module holding the WebAssembly as one base64 string
 * (4.5 MB): bundled, it made half of each bundle's source, which V8 keeps in memory as the
 * script's text, and the string itself stayed referenced by the module for the process's life.
 * The bundle reads the .wasm file beside it instead (decoded here, at build time), when Prisma
 * first asks for it.
 */
const wasmFiles = new Map()
const wasmBeside = {
  name: 'prisma-wasm-beside-bundle',
  setup(b) {
    b.onLoad({ filter: /query_compiler_[a-z]+_bg\.[a-z]+\.wasm-base64\.js$/ }, (args) => {
      const file = path.basename(args.path).replace(/\.wasm-base64\.js$/, '.wasm')
      wasmFiles.set(file, Buffer.from(createRequire(import.meta.url)(args.path).wasm, 'base64'))
      const name = JSON.stringify(file)
      return {
        loader: 'js',
        contents: `const { readFileSync } = require('node:fs')
const { join } = require('node:path')
// Read on demand, never kept. Prisma passes this to Buffer.from(wasm, 'base64'), which copies a
// Buffer as it is: the bytes, without a base64 detour.
Object.defineProperty(module.exports, 'wasm', {
  enumerable: true,
  get: () => readFileSync(join(__dirname, ${name})),
})`,
      }
    })
  },
}

/**
 * A module named `*.chunk.ts` (under src/) is bundled into a file of its own, `dist/<name>.js`,
 * and what requires it keeps a `require('./<name>.js')`: libraries only some instances load
 * (pickup-share's S3 clients) stay out of main.js, whose whole source text V8 reads, parses and
 * keeps at every start. The chunk carries its own copy of whatever it imports, so it should
 * export libraries the rest of the bundle does not use, not app code.
 */
const chunkName = (file) => path.basename(file).replace(/\.chunk\.ts$/, '')
const chunksApart = {
  name: 'chunks-apart',
  setup(b) {
    b.onResolve({ filter: /\.chunk\.ts$/ }, (args) =>
      args.kind === 'entry-point' ? undefined : { path: `./${chunkName(args.path)}.js`, external: true },
    )
  },
}

const appDir = process.cwd()
const chunks = readdirSync(path.join(appDir, 'src'), { recursive: true })
  .map(String)
  .filter((f) => f.endsWith('.chunk.ts'))
  .map((f) => ({ in: path.join('src', f), out: chunkName(f) }))
const entryPoints = [
  ...['main', 'cli']
    .filter((name) => existsSync(path.join(appDir, 'src', `${name}.ts`)))
    .map((name) => ({ in: `src/${name}.ts`, out: name })),
  ...chunks,
]
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
  // V8 keeps each script's whole source for as long as the process runs (it compiles functions
  // lazily from it), so comments and indentation were heap: dns-manager's bundle went from
  // 6.8 to 4.8 MB, and its idle RSS down by 3 MB. Names are kept, so stacks still name the
  // functions; the maps give positions (`node --enable-source-maps`).
  minifyWhitespace: true,
  logLevel: 'warning',
  // Optional native add-ons and dev-only embedded Postgres are never part of a service bundle.
  external: ['pg-native', '@electric-sql/pglite'],
  plugins: [wasmBeside, chunksApart],
})
for (const [file, bytes] of wasmFiles) writeFileSync(path.join(appDir, 'dist', file), bytes)

// esbuild escapes non-ASCII text in strings and regular expressions (charset ascii) and the
// whitespace minification drops comments, so a bundle is pure ASCII. One character above U+00FF
// anywhere (a '…' in a comment did it once) makes V8 hold the whole source at two bytes a
// character: 7 MB of heap for key-info's 3.5 MB bundle. Such a build fails here.
for (const entry of entryPoints) {
  const out = path.join(appDir, 'dist', `${entry.out}.js`)
  const text = readFileSync(out, 'utf8')
  // esbuild leaves an import() it cannot resolve (a dependency not installed) outside the bundle
  // without a word; the service would then fail to load it, or load a second copy of what it
  // shares with the bundle (graphql-jit's own graphql). Every such import must be bundled.
  const unbundled = [...text.matchAll(/\bimport\("([^"]+)"\)/g)]
    .map((m) => m[1])
    .filter((spec) => !spec.startsWith('node:') && !builtinModules.includes(spec))
  if (unbundled.length > 0) {
    console.error(
      `build-app: ${out} imports ${unbundled.join(', ')} at run time instead of bundling it (not installed?)`,
    )
    process.exit(1)
  }
  const nonAscii = /[^\x00-\x7f]/.exec(text)
  if (nonAscii) {
    console.error(
      `build-app: ${out} holds a non-ASCII character (${JSON.stringify(nonAscii[0])} at ${nonAscii.index}): V8 would keep the whole bundle at two bytes a character`,
    )
    process.exit(1)
  }
}
console.log(`built ${entryPoints.map((e) => e.in).join(', ')} → dist/`)

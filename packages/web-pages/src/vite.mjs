// Plain ESM (not TypeScript): Vite loads a config's workspace imports with Node itself.
import { readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { brotliCompressSync, constants, gzipSync } from 'node:zlib'

/** Text files of a build worth compressing (images and fonts are compressed already). */
const COMPRESSIBLE = /\.(js|mjs|css|html|svg|json|txt)$/

/**
 * Writes `<file>.br` (brotli, quality 11) and `<file>.gz` (gzip -9) beside every text file of
 * the build, once at build time, so that serving costs no CPU (core's serveWebBuild picks the
 * copy the client accepts, with `Vary: Accept-Encoding`). A copy that would not be smaller is
 * not written.
 * @returns {import('vite').Plugin}
 */
export function precompress() {
  return {
    name: 'quartet-precompress',
    apply: 'build',
    writeBundle(options, bundle) {
      const dir = options.dir ?? ''
      for (const name of Object.keys(bundle)) {
        if (!COMPRESSIBLE.test(name)) continue
        const file = path.join(dir, name)
        const data = readFileSync(file)
        const br = brotliCompressSync(data, {
          params: {
            [constants.BROTLI_PARAM_QUALITY]: 11,
            [constants.BROTLI_PARAM_SIZE_HINT]: data.length,
          },
        })
        const gz = gzipSync(data, { level: 9 })
        if (br.length < data.length) writeFileSync(`${file}.br`, br)
        if (gz.length < data.length) writeFileSync(`${file}.gz`, gz)
      }
    },
  }
}

/**
 * The Vite config of a service's pages (pickup-share, dns-manager's back office): `web/` holds
 * index.html, src/ and public/; the build goes to the app's dist/web (served by core's
 * serveWebBuild), hashed asset names under /assets, no inline script (the CSP allows scripts from
 * the site only). Preact's JSX.
 *
 * @param {string} webDir the app's web/ folder
 * @param {{ devApi?: Record<string, string> }} [options] what `pnpm dev:web` proxies to the app
 * @returns {import('vite').UserConfig}
 */
export function pagesViteConfig(webDir, options = {}) {
  return {
    root: webDir,
    base: '/',
    publicDir: path.join(webDir, 'public'),
    oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
    plugins: [precompress()],
    build: {
      outDir: path.join(webDir, '..', 'dist', 'web'),
      emptyOutDir: true,
      assetsDir: 'assets',
      target: 'es2022',
      sourcemap: true,
      // A module preload polyfill would be an inline script; every supported browser has modulepreload.
      modulePreload: { polyfill: false },
      assetsInlineLimit: 0,
    },
    // `pnpm dev:web`: the pages with hot reload, the API from the app's `pnpm dev`.
    server: { proxy: options.devApi ?? {} },
  }
}

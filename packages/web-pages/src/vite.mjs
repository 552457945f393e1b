// Plain ESM (not TypeScript): Vite loads a config's workspace imports with Node itself.
import path from 'node:path'

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
    esbuild: { jsx: 'automatic', jsxImportSource: 'preact' },
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

import path from 'node:path'
import { defineConfig } from 'vite'

// The pages of pickup-share: built into ../dist/web (served by src/http/web.ts), hashed asset
// names under /assets, no inline script (the CSP allows scripts from this site only).
export default defineConfig({
  root: __dirname,
  base: '/',
  publicDir: path.join(__dirname, 'public'),
  esbuild: { jsx: 'automatic', jsxImportSource: 'preact' },
  build: {
    outDir: path.join(__dirname, '..', 'dist', 'web'),
    emptyOutDir: true,
    assetsDir: 'assets',
    target: 'es2022',
    sourcemap: true,
    // A module preload polyfill would be an inline script; every supported browser has modulepreload.
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
  },
  server: {
    // `pnpm dev:web`: the pages with hot reload, the API from `pnpm dev` on :3004.
    proxy: { '/api': 'http://127.0.0.1:3004' },
  },
})

import { pagesViteConfig } from '@quartet/web-pages/vite'
import { defineConfig } from 'vite'

// The back office of dns-manager, built with the setup every service's pages share (packages/web-pages).
export default defineConfig(
  pagesViteConfig(import.meta.dirname, { devApi: { '/account/api': 'http://127.0.0.1:3003' } }),
)

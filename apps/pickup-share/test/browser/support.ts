import path from 'node:path'
import { ensureWebBuilt as ensureBuilt, screenshotDir } from '@quartet/web-pages/testing'

// The shared page-test setup (packages/web-pages), bound to this app.
export { axeSerious, CHROMIUM, CHROMIUM_ARGS } from '@quartet/web-pages/testing'
export const APP_DIR = path.resolve(__dirname, '..', '..')
export const SCREENSHOT_DIR = screenshotDir(APP_DIR)
export const ensureWebBuilt = () => ensureBuilt(APP_DIR)

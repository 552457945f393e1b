import path from 'node:path'
import { describeWhen, missingNeeds } from '@quartet/core/testing'
import { CHROMIUM_NEED, ensureWebBuilt as ensureBuilt, screenshotDir } from '@quartet/web-pages/testing'

// The shared page-test setup (packages/web-pages), bound to this app.
export { axeSerious, CHROMIUM, CHROMIUM_ARGS } from '@quartet/web-pages/testing'
export const APP_DIR = path.resolve(__dirname, '..', '..')
export const SCREENSHOT_DIR = screenshotDir(APP_DIR)
export const ensureWebBuilt = () => ensureBuilt(APP_DIR)

const BROWSER_NEEDS = { programs: [CHROMIUM_NEED] }
/** Whether Chromium is here; a file's shared set-up (its top-level beforeAll) waits for it. */
export const haveChromium = missingNeeds(BROWSER_NEEDS).length === 0
/** `describe` for a suite in Chromium: fails under CI when it is missing, skips elsewhere. */
export const describeBrowser = (title: string, suite: () => void) => describeWhen(BROWSER_NEEDS, title, suite)

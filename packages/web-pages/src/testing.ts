import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import path from 'node:path'
import type { Page } from 'playwright-core'

/**
 * The real-Chromium page tests every service shares: build the pages on demand, start Debian's
 * chromium through playwright-core, run axe-core in the page. `appDir` is the app's folder (its
 * pages in web/, built into dist/web).
 */
export const screenshotDir = (appDir: string) => path.join(appDir, 'test-results', 'screenshots')

/** Debian's chromium (`apt-get install chromium`); TEST_CHROMIUM overrides the path. */
export const CHROMIUM = process.env.TEST_CHROMIUM ?? '/usr/bin/chromium'

/** Chromium as a browser suite's need (`describeWhen` of @quartet/core/testing). */
export const CHROMIUM_NEED = {
  name: CHROMIUM,
  debian: 'chromium',
  hint: 'TEST_CHROMIUM=<path> names another',
}

export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-dev-shm-usage',
]

function newestMtime(dir: string): number {
  let newest = 0
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name)
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(full) : statSync(full).mtimeMs)
  }
  return newest
}

const sleep = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms)

const isFresh = (appDir: string) => {
  const index = path.join(appDir, 'dist', 'web', 'index.html')
  // The shared stylesheet and config count too: a change there rebuilds every app's pages.
  const newest = Math.max(newestMtime(path.join(appDir, 'web')), newestMtime(__dirname))
  return existsSync(index) && statSync(index).mtimeMs >= newest
}

/**
 * Builds the pages (vite) when dist/web is missing or older than any file under web/. Test files
 * run in parallel workers: a lock folder lets one build while the others wait for it.
 */
export function ensureWebBuilt(appDir: string): void {
  const lock = `${path.join(appDir, 'dist', 'web')}.build-lock`
  for (const started = Date.now(); !isFresh(appDir); sleep(200)) {
    try {
      mkdirSync(path.dirname(lock), { recursive: true })
      mkdirSync(lock)
    } catch {
      // Someone else is building; a lock older than 3 minutes was left by a killed run.
      if (existsSync(lock) && Date.now() - statSync(lock).mtimeMs > 180_000)
        rmSync(lock, { recursive: true, force: true })
      if (Date.now() - started > 180_000) throw new Error(`timed out waiting for ${lock}`)
      continue
    }
    try {
      if (!isFresh(appDir)) buildWeb(appDir)
    } finally {
      rmSync(lock, { recursive: true, force: true })
    }
  }
}

function buildWeb(appDir: string): void {
  execFileSync(
    process.execPath,
    [
      path.join(appDir, 'node_modules', 'vite', 'bin', 'vite.js'),
      'build',
      '--config',
      path.join(appDir, 'web', 'vite.config.mts'),
      '--logLevel',
      'warn',
    ],
    { cwd: appDir, stdio: 'inherit', timeout: 120_000 },
  )
}

interface AxeViolation {
  id: string
  impact: string | null
  help: string
  nodes: Array<{ target: string[]; failureSummary?: string }>
}

let axeCache: string | undefined
const axeSource = () => (axeCache ??= readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8'))

/** axe-core in the page; the serious and critical violations, summarised for a readable failure. */
export async function axeSerious(page: Page): Promise<string[]> {
  // Evaluated over the DevTools protocol: a <script> tag would (rightly) be refused by the page's CSP.
  await page.evaluate(axeSource())
  const violations = await page.evaluate(async () => {
    const { axe, document } = globalThis as unknown as {
      axe: { run: (context: unknown, options: unknown) => Promise<{ violations: unknown[] }> }
      document: unknown
    }
    const result = await axe.run(document, { resultTypes: ['violations'] })
    return result.violations
  })
  return (violations as AxeViolation[])
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.impact} ${v.id}: ${v.help} — ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`)
}

import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import path from 'node:path'
import type { Page } from 'playwright-core'

export const APP_DIR = path.resolve(__dirname, '..', '..')
export const WEB_DIR = path.join(APP_DIR, 'web')
export const WEB_OUT = path.join(APP_DIR, 'dist', 'web')
export const SCREENSHOT_DIR = path.join(APP_DIR, 'test-results', 'screenshots')

/** Debian's chromium (`apt-get install chromium`); TEST_CHROMIUM overrides the path. */
export const CHROMIUM = process.env.TEST_CHROMIUM ?? '/usr/bin/chromium'

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

const isFresh = () => {
  const index = path.join(WEB_OUT, 'index.html')
  return existsSync(index) && statSync(index).mtimeMs >= newestMtime(WEB_DIR)
}

/**
 * Builds the pages (vite) when dist/web is missing or older than any file under web/. Test files
 * run in parallel workers: a lock folder lets one build while the others wait for it.
 */
export function ensureWebBuilt(): void {
  const lock = `${WEB_OUT}.build-lock`
  for (const started = Date.now(); !isFresh(); sleep(200)) {
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
      if (!isFresh()) buildWeb()
    } finally {
      rmSync(lock, { recursive: true, force: true })
    }
  }
}

function buildWeb(): void {
  execFileSync(
    process.execPath,
    [
      path.join(APP_DIR, 'node_modules', 'vite', 'bin', 'vite.js'),
      'build',
      '--config',
      path.join(WEB_DIR, 'vite.config.ts'),
      '--logLevel',
      'warn',
    ],
    { cwd: APP_DIR, stdio: 'inherit', timeout: 120_000 },
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

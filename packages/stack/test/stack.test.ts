import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { uniqueName } from '@quartet/core/testing'
import { readMigrations } from '@quartet/core/migrate'
import { appDir, SERVICES } from '../src/services.ts'
import { launchStack, serviceLogs } from './launch.ts'

async function expectAllReady(ports: Record<string, number>): Promise<void> {
  for (const spec of SERVICES) {
    const base = `http://127.0.0.1:${ports[spec.name]}`
    expect((await fetch(`${base}/healthz`)).status).toBe(200)
    expect((await fetch(`${base}/readyz`)).status).toBe(200)
  }
}

describe('pnpm start (the stack launcher)', () => {
  it('when no DATABASE_URL or REDIS_URL is set, then all four serve on an embedded Postgres that survives a restart', async () => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'quartet-stack-'))
    try {
      const first = await launchStack({ QUARTET_DATA_DIR: dataDir })
      await expectAllReady(first.ports)
      expect(first.lines.some((l) => l.includes('embedded Postgres (PGlite)'))).toBe(true)
      expect(first.lines.some((l) => l.includes('REDIS_URL is not set'))).toBe(true)
      for (const spec of SERVICES) {
        const migrated = serviceLogs(first.lines, spec.name).find((l) => l.msg === 'migrations up to date')
        const all = readMigrations(path.join(appDir(spec), 'prisma', 'migrations')).map((m) => m.name)
        expect(migrated?.applied).toEqual(all)
      }
      expect(await first.stop('SIGINT')).toBe(0)

      const second = await launchStack({ QUARTET_DATA_DIR: dataDir })
      await expectAllReady(second.ports)
      for (const spec of SERVICES) {
        // The schema and its bookkeeping are still there: nothing to apply the second time.
        const migrated = serviceLogs(second.lines, spec.name).find((l) => l.msg === 'migrations up to date')
        expect(migrated?.applied).toEqual([])
      }
      expect(await second.stop('SIGTERM')).toBe(0)
    } finally {
      rmSync(dataDir, { recursive: true, force: true })
    }
  })

  it('when DATABASE_URL (and REDIS_URL, if this run has one) are set, then all four use those servers', async () => {
    const env: NodeJS.ProcessEnv = { DATABASE_URL: process.env.DATABASE_URL }
    if (process.env.REDIS_URL) env.REDIS_URL = process.env.REDIS_URL
    for (const spec of SERVICES)
      env[`${spec.envPrefix}_DATABASE_SCHEMA`] = uniqueName(`stack_${spec.name.replace('-', '_')}`)
    const stack = await launchStack(env)
    await expectAllReady(stack.ports)
    expect(stack.lines.some((l) => l.includes('embedded Postgres'))).toBe(false)
    expect(stack.lines.some((l) => l.includes('REDIS_URL is not set'))).toBe(!process.env.REDIS_URL)
    expect(await stack.stop()).toBe(0)
  })
})

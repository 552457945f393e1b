import { execFileSync, spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { describeWhen, uniqueName } from '@quartet/core/testing'
import { REPO_ROOT } from '../src/services.ts'
import { freePort } from './launch.ts'

/** The README's "run one service alone" commands, as a newcomer types them on a fresh clone. */
const INSTALL = 'pnpm install --frozen-lockfile'
const BUILD = 'pnpm turbo run build --filter=@quartet/key-info'
const START = 'node apps/key-info/dist/main.js'

const databaseUrl = process.env.DATABASE_URL

describeWhen({ env: ['DATABASE_URL'] }, 'one service alone, from a fresh clone (README)', () => {
  it('when the README’s commands run in a fresh clone, then the service builds (Prisma client included), starts and is ready', async () => {
    const readme = readFileSync(path.join(REPO_ROOT, 'README.md'), 'utf8')
    for (const command of [BUILD, START]) expect(readme).toContain(command)

    const dir = mkdtempSync(path.join(os.tmpdir(), 'quartet-clone-'))
    try {
      // What is committed, nothing generated or built: a clone of this checkout's HEAD.
      execFileSync('git', ['clone', '--quiet', '--no-hardlinks', REPO_ROOT, dir], { stdio: 'ignore' })
      const sh = (command: string) =>
        execFileSync('sh', ['-c', command], {
          cwd: dir,
          // The packages are in the machine's pnpm store already; nothing needs the network.
          env: { ...process.env, npm_config_prefer_offline: 'true', TURBO_TELEMETRY_DISABLED: '1' },
          stdio: 'pipe',
          timeout: 240_000,
        })
      sh(INSTALL)
      sh(BUILD)

      const port = await freePort()
      const child = spawn(process.execPath, START.split(' ').slice(1), {
        cwd: dir,
        env: {
          PATH: process.env.PATH,
          DATABASE_URL: databaseUrl,
          DATABASE_SCHEMA: uniqueName('single'),
          PORT: String(port),
          LOG_LEVEL: 'warn',
        },
        stdio: ['ignore', 'ignore', 'pipe'],
      })
      let stderr = ''
      child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()))
      try {
        const deadline = Date.now() + 30_000
        let ready = 0
        while (Date.now() < deadline && child.exitCode === null) {
          ready = await fetch(`http://127.0.0.1:${port}/readyz`).then(
            (r) => r.status,
            () => 0,
          )
          if (ready === 200) break
          await new Promise((r) => setTimeout(r, 200))
        }
        expect({ ready, stderr: ready === 200 ? '' : stderr }).toEqual({ ready: 200, stderr: '' })
      } finally {
        child.kill('SIGTERM')
        await new Promise((r) => child.once('exit', r))
      }
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }, 420_000)
})

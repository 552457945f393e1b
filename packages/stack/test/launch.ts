import { type ChildProcess, spawn } from 'node:child_process'
import net from 'node:net'
import path from 'node:path'
import { createInterface } from 'node:readline'
import { REPO_ROOT, SERVICES } from '../src/services.ts'

/** A free loopback port (the OS picks, we release it and hand it on). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo
      server.close(() => resolve(port))
    })
  })
}

export interface Launched {
  child: ChildProcess
  lines: string[]
  ports: Record<string, number>
  /** Resolves with the exit code once the launcher has exited. */
  exit: Promise<number | null>
  stop(signal?: NodeJS.Signals): Promise<number | null>
}

/** Runs the real launcher (`packages/stack/src/main.ts`, as `pnpm start` does after building). */
export async function launchStack(env: NodeJS.ProcessEnv, args: string[] = []): Promise<Launched> {
  const ports: Record<string, number> = {}
  const portEnv: Record<string, string> = {}
  for (const spec of SERVICES) {
    ports[spec.name] = await freePort()
    portEnv[`${spec.envPrefix}_PORT`] = String(ports[spec.name])
  }
  const child = spawn(
    process.execPath,
    [
      path.join(REPO_ROOT, 'node_modules', 'tsx', 'dist', 'cli.mjs'),
      path.join(REPO_ROOT, 'packages/stack/src/main.ts'),
      ...args,
    ],
    {
      env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env, ...portEnv },
      stdio: ['ignore', 'pipe', 'pipe'],
      // Its own process group: whatever happens to this test (a timeout, a crash), the launcher
      // and every service it started go with it, instead of living on and holding ports.
      detached: true,
    },
  )
  const killGroup = () => {
    try {
      process.kill(-child.pid!, 'SIGKILL')
    } catch {
      // already gone
    }
  }
  process.once('exit', killGroup)
  const lines: string[] = []
  for (const stream of [child.stdout!, child.stderr!])
    createInterface({ input: stream }).on('line', (l) => lines.push(l))
  let exited = false
  const exit = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => {
      exited = true
      resolve(code)
    }),
  )
  const up = await Promise.race([
    (async () => {
      const deadline = Date.now() + 90_000
      while (!exited && Date.now() < deadline) {
        if (lines.some((l) => l.startsWith('Quartet is up'))) return true
        await new Promise((r) => setTimeout(r, 100))
      }
      return false
    })(),
    exit.then(() => false),
  ])
  if (!up) {
    killGroup()
    // Readiness polls say little: the last lines of everything else say why.
    const telling = lines.filter((l) => !l.includes('"request completed"'))
    throw new Error(`the stack did not come up:\n${telling.slice(-60).join('\n')}`)
  }
  return {
    child,
    lines,
    ports,
    exit,
    async stop(signal = 'SIGINT') {
      child.kill(signal)
      return exit
    },
  }
}

/** The parsed JSON log lines one service (or one replica, `key-info#2`) printed through the launcher. */
export function serviceLogs(lines: string[], service: string): Array<Record<string, unknown>> {
  const prefix = new RegExp(`^${service.replace('#', '\\#')}\\s*\\| `)
  return lines
    .filter((l) => prefix.test(l))
    .map((l) => l.replace(prefix, ''))
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>)
}

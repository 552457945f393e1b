import { type ChildProcess, spawn } from 'node:child_process'
import { chownSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'

/**
 * Everything one suite run owns: a temporary folder (Postgres data, Redis, blobs) and the
 * processes started in it. Removed by `close()`; if the test process dies first (jest killed,
 * a crash), a small watchdog shell kills the recorded processes (woken first, in case they
 * were frozen) and removes the folder, so a failed run never leaves a cluster or a Redis behind.
 */
export class Sandbox {
  readonly dir: string
  private readonly pids = new Set<number>()
  private readonly pidFile: string
  private readonly watchdog: ChildProcess
  private closed = false
  private readonly onExit = () => this.killAllNow()

  constructor(prefix = 'quartet-faults-') {
    this.dir = mkdtempSync(path.join(os.tmpdir(), prefix))
    this.pidFile = path.join(this.dir, 'pids')
    writeFileSync(this.pidFile, '')
    // Postgres refuses to run as root: when we are root, the folder belongs to its user.
    if (process.getuid?.() === 0) {
      const pgUser = postgresUser()
      if (pgUser) chownSync(this.dir, pgUser.uid, pgUser.gid)
    }
    const script = [
      'parent=$1; dir=$2',
      'while kill -0 "$parent" 2>/dev/null; do sleep 1; done',
      // Children first (Postgres backends), woken so that the kill lands on a frozen process.
      'for p in $(cat "$dir/pids" 2>/dev/null); do',
      '  pkill -CONT -P "$p"; kill -CONT "$p"; kill -KILL "$p"; pkill -KILL -P "$p"',
      'done 2>/dev/null',
      'rm -rf "$dir"',
    ].join('\n')
    this.watchdog = spawn('sh', ['-c', script, 'faults-watchdog', String(process.pid), this.dir], {
      detached: true,
      stdio: 'ignore',
    })
    this.watchdog.unref()
    process.once('exit', this.onExit)
  }

  /** Records a process the sandbox must kill at the end (and the watchdog, if we die). */
  track(pid: number | undefined): void {
    if (pid === undefined) return
    this.pids.add(pid)
    this.writePids()
  }

  untrack(pid: number | undefined): void {
    if (pid === undefined) return
    this.pids.delete(pid)
    this.writePids()
  }

  path(...parts: string[]): string {
    return path.join(this.dir, ...parts)
  }

  /** Kills whatever is still running (woken first) and removes the folder. */
  close(): void {
    if (this.closed) return
    this.closed = true
    this.killAllNow()
    process.removeListener('exit', this.onExit)
    try {
      if (this.watchdog.pid) process.kill(this.watchdog.pid, 'SIGKILL')
    } catch {
      // already gone
    }
    rmSync(this.dir, { recursive: true, force: true })
  }

  private killAllNow(): void {
    for (const pid of this.pids) {
      for (const child of childPids(pid)) signal(child, 'SIGCONT')
      signal(pid, 'SIGCONT')
      signal(pid, 'SIGKILL')
      for (const child of childPids(pid)) signal(child, 'SIGKILL')
    }
    this.pids.clear()
  }

  private writePids(): void {
    if (!this.closed) writeFileSync(this.pidFile, [...this.pids].join('\n'))
  }
}

/** Sends a signal, ignoring a process that is already gone. */
export function signal(pid: number, sig: NodeJS.Signals): boolean {
  try {
    process.kill(pid, sig)
    return true
  } catch {
    return false
  }
}

/** The direct children of a process (Linux /proc). */
export function childPids(parent: number): number[] {
  const out: number[] = []
  let entries: string[]
  try {
    entries = readdirSync('/proc')
  } catch {
    return out
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue
    const stat = readProcStat(Number(entry))
    if (stat && stat.ppid === parent) out.push(Number(entry))
  }
  return out
}

/** Parent pid, state and resident set size of a process, or null when it is gone. */
export function readProcStat(pid: number): { ppid: number; state: string; rssBytes: number } | null {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // The command name may hold spaces and parentheses: fields start after the last ')'.
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ')
    return {
      state: fields[0] ?? '?',
      ppid: Number(fields[1]),
      rssBytes: Number(fields[21]) * PAGE_SIZE,
    }
  } catch {
    return null
  }
}

const PAGE_SIZE = 4096

/** The uid and gid of the `postgres` system user, when there is one. */
export function postgresUser(): { uid: number; gid: number } | null {
  try {
    const passwd = readFileSync('/etc/passwd', 'utf8')
    const line = passwd.split('\n').find((l) => l.startsWith('postgres:'))
    if (!line) return null
    const [, , uid, gid] = line.split(':')
    return { uid: Number(uid), gid: Number(gid) }
  } catch {
    return null
  }
}

/** A free loopback port (the OS picks one; we release it and hand it on). */
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

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** Polls `probe` until it resolves true, or throws after `timeoutMs` with the last failure. */
export async function waitFor(
  what: string,
  probe: () => Promise<boolean>,
  timeoutMs: number,
  everyMs = 100,
): Promise<void> {
  const deadline = Date.now() + timeoutMs
  let last = ''
  while (Date.now() < deadline) {
    try {
      if (await probe()) return
    } catch (err) {
      last = (err as Error).message
    }
    await sleep(everyMs)
  }
  throw new Error(`${what} did not happen within ${timeoutMs} ms${last ? ` (${last})` : ''}`)
}

import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { createSocket } from 'node:dgram'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import type { TestDeps } from '@quartet/core/testing'
import type { DnsProvider } from '../../src/domain/provider.ts'
import { powerDnsProvider } from '../../src/providers/powerdns.ts'
import type { Db } from '../../src/store/db.ts'
import { addZone, buildApp, createAccount, unique } from '../helpers.ts'

const PDNS_SERVER = ['/usr/sbin/pdns_server', '/usr/bin/pdns_server'].find((p) => existsSync(p))
const SCHEMA = '/usr/share/doc/pdns-backend-sqlite3/schema.sqlite3.sql'

/** Why a real PowerDNS cannot run here, or null when it can. */
export function powerDnsUnavailable(): string | null {
  if (!PDNS_SERVER) return 'pdns_server is not installed (Debian: pdns-server pdns-backend-sqlite3 sqlite3)'
  if (!existsSync(SCHEMA)) return `${SCHEMA} is missing (Debian: pdns-backend-sqlite3)`
  try {
    execFileSync('sqlite3', ['-version'], { stdio: 'ignore' })
  } catch {
    return 'the sqlite3 command is missing (Debian: sqlite3)'
  }
  return null
}

/** A TCP port that is also free for UDP on 127.0.0.1. */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = await new Promise<number>((resolve, reject) => {
      const srv = createServer()
      srv.once('error', reject)
      srv.listen(0, '127.0.0.1', () => {
        const p = (srv.address() as { port: number }).port
        srv.close(() => resolve(p))
      })
    })
    const udpFree = await new Promise<boolean>((resolve) => {
      const sock = createSocket('udp4')
      sock.once('error', () => resolve(false))
      sock.bind(port, '127.0.0.1', () => sock.close(() => resolve(true)))
    })
    if (udpFree) return port
  }
}

export interface PowerDns {
  apiUrl: string
  apiKey: string
  dnsPort: number
  /** SIGSTOP: the process stays, its sockets keep accepting into the kernel's queues, nothing is answered. */
  freeze(): void
  /** SIGCONT: it wakes and works through what queued up meanwhile. */
  thaw(): void
  stop(): Promise<void>
}

/**
 * A real PowerDNS Authoritative server (gsqlite3 backend, HTTP API on) on free loopback ports,
 * with its own config dir and database, for the tests. Caches are off so answers follow changes.
 */
export async function startPowerDns(): Promise<PowerDns> {
  const dir = mkdtempSync(path.join(tmpdir(), 'pdns-test-'))
  const db = path.join(dir, 'pdns.sqlite3')
  execFileSync('sqlite3', [db], { input: `.read ${SCHEMA}\n` })
  const dnsPort = await freePort()
  const webPort = await freePort()
  const apiKey = randomBytes(16).toString('hex')
  writeFileSync(
    path.join(dir, 'pdns.conf'),
    [
      'launch=gsqlite3',
      `gsqlite3-database=${db}`,
      'local-address=127.0.0.1',
      `local-port=${dnsPort}`,
      'api=yes',
      `api-key=${apiKey}`,
      'webserver=yes',
      'webserver-address=127.0.0.1',
      `webserver-port=${webPort}`,
      'webserver-allow-from=127.0.0.0/8',
      `socket-dir=${dir}`,
      'guardian=no',
      'daemon=no',
      'disable-syslog=yes',
      'loglevel=3',
      'cache-ttl=0',
      'query-cache-ttl=0',
      'negquery-cache-ttl=0',
      'zone-cache-refresh-interval=0',
      '',
    ].join('\n'),
  )
  const child: ChildProcess = spawn(PDNS_SERVER!, [`--config-dir=${dir}`], {
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  let stderr = ''
  child.stderr?.on('data', (d: Buffer) => {
    stderr += d.toString()
  })
  const apiUrl = `http://127.0.0.1:${webPort}`
  const deadline = Date.now() + 15_000
  for (;;) {
    if (child.exitCode !== null) throw new Error(`pdns_server exited: ${stderr.slice(-2000)}`)
    try {
      const res = await fetch(`${apiUrl}/api/v1/servers/localhost`, { headers: { 'X-API-Key': apiKey } })
      if (res.ok) break
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL')
      throw new Error(`pdns_server did not start: ${stderr.slice(-2000)}`)
    }
    await new Promise((r) => setTimeout(r, 100))
  }
  let stopped = false
  return {
    apiUrl,
    apiKey,
    dnsPort,
    freeze: () => void child.kill('SIGSTOP'),
    thaw: () => void child.kill('SIGCONT'),
    async stop() {
      if (stopped) return
      stopped = true
      child.kill('SIGCONT')
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once('exit', r))
        child.kill('SIGTERM')
        const timer = setTimeout(() => child.kill('SIGKILL'), 5000)
        await exited
        clearTimeout(timer)
      }
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

/**
 * A `describe` for suites that need a real PowerDNS and `dig` (unless `dig: false`), and
 * whatever `also` says is missing: skipped, saying why, where they are not installed. CI
 * installs them (README).
 */
export function powerDnsDescribe(options: { dig?: boolean; also?: () => string | null } = {}) {
  return (title: string, suite: () => void): void => {
    const unavailable =
      powerDnsUnavailable() ?? (options.dig === false ? null : digUnavailable()) ?? options.also?.() ?? null
    if (unavailable) {
      console.warn(`SKIPPING ${title}: ${unavailable}`)
      describe.skip(title, suite)
    } else describe(title, suite)
  }
}

/** `describe` with a real PowerDNS and `dig` (powerDnsDescribe). */
export const describeWithPowerDns = powerDnsDescribe()

/**
 * A real PowerDNS for the enclosing `describe`: started in beforeAll, stopped in afterAll, and
 * thawed after each test (should one leave it frozen). The object reads the running server.
 */
export function usePowerDns(): PowerDns {
  let pdns: PowerDns | undefined
  beforeAll(async () => {
    pdns = await startPowerDns()
  }, 30_000)
  afterAll(async () => {
    await pdns?.stop()
  })
  afterEach(() => pdns?.thaw())
  const started = () => {
    if (!pdns) throw new Error('PowerDNS is not started (outside a test?)')
    return pdns
  }
  return {
    get apiUrl() {
      return started().apiUrl
    },
    get apiKey() {
      return started().apiKey
    },
    get dnsPort() {
      return started().dnsPort
    },
    freeze: () => started().freeze(),
    thaw: () => started().thaw(),
    stop: () => started().stop(),
  }
}

/** dns-manager's provider for this PowerDNS. */
export const providerOn = (pdns: Pick<PowerDns, 'apiUrl' | 'apiKey'>, timeoutMs: number) =>
  powerDnsProvider({ apiUrl: pdns.apiUrl, apiKey: pdns.apiKey, serverId: 'localhost', timeoutMs })

/** A new zone `<unique(prefix)>.test`, made at PowerDNS (NS ns1.example.net) and in dns-manager. */
export async function addPowerDnsZone(
  deps: TestDeps<Db>,
  provider: DnsProvider,
  prefix: string,
): Promise<string> {
  const zone = `${unique(prefix)}.test`
  await provider.ensureZone!(zone, ['ns1.example.net'])
  await addZone(deps, zone)
  return zone
}

/**
 * The app on a new zone of this PowerDNS (addPowerDnsZone) with the real provider of
 * `timeoutMs` — or what `wrap` makes of it — and an account.
 */
export async function powerDnsApp(
  deps: TestDeps<Db>,
  pdns: PowerDns,
  options: {
    prefix: string
    timeoutMs: number
    env?: Record<string, string>
    wrap?: (real: DnsProvider) => DnsProvider
  },
) {
  const real = providerOn(pdns, options.timeoutMs)
  const zone = await addPowerDnsZone(deps, real, options.prefix)
  const provider = options.wrap ? options.wrap(real) : real
  const built = buildApp(deps, { provider, ...(options.env ? { env: options.env } : {}) })
  const a = await createAccount(deps)
  return { ...built, zone, a }
}

const DIG = ['/usr/bin/dig'].find((p) => existsSync(p))

/** Why `dig` cannot run here (Debian: dnsutils), or null. */
export function digUnavailable(): string | null {
  return DIG ? null : 'dig is not installed (Debian: dnsutils)'
}

export interface Answer {
  ttl: number
  rdata: string
}

/**
 * What PowerDNS serves for a name and type, asked with `dig` (no recursion, answer section
 * only), sorted by RDATA; [] for NXDOMAIN and NODATA.
 */
export function dig(pdns: Pick<PowerDns, 'dnsPort'>, name: string, type: string): Answer[] {
  const out = execFileSync(
    DIG!,
    [
      '+norec',
      '+noall',
      '+answer',
      '+tries=1',
      '+time=2',
      '-p',
      String(pdns.dnsPort),
      '@127.0.0.1',
      name,
      type,
    ],
    { encoding: 'utf8' },
  )
  return out
    .split('\n')
    .filter((l) => l.trim() && !l.startsWith(';'))
    .map((l) => /^(\S+)\s+(\d+)\s+IN\s+(\S+)\s+(.*)$/.exec(l.trim()))
    .filter((m): m is RegExpExecArray => m !== null && m[3] === type)
    .map((m) => ({ ttl: Number(m[2]), rdata: m[4]! }))
    .sort((a, b) => a.rdata.localeCompare(b.rdata))
}

import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { createSocket } from 'node:dgram'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { describeWhen, findProgram, type TestDeps, type TestNeeds } from '@quartet/core/testing'
import type { DnsProvider } from '../../src/domain/provider.ts'
import { powerDnsProvider } from '../../src/providers/powerdns.ts'
import type { Db } from '../../src/store/db.ts'
import { addZone, buildApp, createAccount, unique } from '../helpers.ts'

const PDNS_SERVER = findProgram('pdns_server')
const SCHEMA = '/usr/share/doc/pdns-backend-sqlite3/schema.sqlite3.sql'

const DIG = findProgram('dig')
/** `dig`, which the tests ask what PowerDNS serves. */
export const DIG_NEED = { name: 'dig', debian: 'dnsutils' }

/** What a real PowerDNS needs here: the server, its sqlite backend's schema, and sqlite3. */
export const POWERDNS_NEEDS = {
  programs: [
    { name: 'pdns_server', debian: 'pdns-server' },
    { name: 'sqlite3', debian: 'sqlite3' },
  ],
  files: [{ path: SCHEMA, debian: 'pdns-backend-sqlite3' }],
} satisfies TestNeeds

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
 * whatever `also` lists: describeWhen, so a missing one fails under CI and skips elsewhere.
 */
export function powerDnsDescribe(options: { dig?: boolean; also?: TestNeeds } = {}) {
  const needs: TestNeeds = {
    programs: [
      ...POWERDNS_NEEDS.programs,
      ...(options.dig === false ? [] : [DIG_NEED]),
      ...(options.also?.programs ?? []),
    ],
    files: [...POWERDNS_NEEDS.files, ...(options.also?.files ?? [])],
    env: options.also?.env ?? [],
  }
  return (title: string, suite: () => void): void => describeWhen(needs, title, suite)
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

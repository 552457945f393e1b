import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import { readMigrations } from '@quartet/core/migrate'
import { describeWhen, uniqueName } from '@quartet/core/testing'
import { startCutProxy } from '@quartet/core/testing/cut-proxy'
import { appDir, SERVICES, type ServiceSpec } from '../src/services.ts'
import { freePort, type Launched, launchStack, serviceLogs } from './launch.ts'

/**
 * `pnpm start --replicas 2`: two processes of each service, one Postgres and one Redis, Caddy
 * (the compose Caddyfile) in front. Every request of these tests goes through Caddy, which
 * spreads them over both replicas, so each counted or single-use rule is decided by two
 * processes at once, as on a cluster.
 */
const databaseUrl = process.env.DATABASE_URL
const redisUrl = process.env.REDIS_URL
const NEEDS = {
  programs: [{ name: 'caddy', debian: 'caddy', runs: ['version'] }],
  env: ['DATABASE_URL', 'REDIS_URL'],
}

const REPLICAS = 2
const run = randomBytes(3).toString('hex')
const schemas = Object.fromEntries(SERVICES.map((s) => [s.name, uniqueName(s.name.replace('-', '_'))]))
const adminPassword = randomBytes(12).toString('hex')

interface Answer {
  status: number
  headers: http.IncomingHttpHeaders
  body: Buffer
  json: () => Record<string, unknown>
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 64 })

/** One request through Caddy to the service `host` names. */
function viaProxy(
  proxyUrl: string,
  host: string,
  method: string,
  pathname: string,
  options: { headers?: Record<string, string>; body?: unknown } = {},
): Promise<Answer> {
  const raw =
    options.body === undefined
      ? undefined
      : Buffer.isBuffer(options.body)
        ? options.body
        : Buffer.from(JSON.stringify(options.body))
  const headers: Record<string, string> = {
    host,
    ...(raw && !Buffer.isBuffer(options.body) ? { 'content-type': 'application/json' } : {}),
    ...(raw ? { 'content-length': String(raw.length) } : {}),
    ...options.headers,
  }
  return new Promise((resolve, reject) => {
    const req = http.request(`${proxyUrl}${pathname}`, { method, headers, agent }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => {
        const body = Buffer.concat(chunks)
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body,
          json: () => JSON.parse(body.toString('utf8')) as Record<string, unknown>,
        })
      })
      res.on('error', reject)
    })
    req.on('error', reject)
    req.setTimeout(30_000, () => req.destroy(new Error('timed out')))
    req.end(raw)
  })
}

/** An app's operator CLI against the test's schema, as an operator runs it. */
function cli<T>(spec: ServiceSpec, ...args: string[]): Promise<T> {
  return new Promise((resolve, reject) =>
    execFile(
      process.execPath,
      [path.join(appDir(spec), 'dist', 'cli.js'), ...args],
      {
        cwd: appDir(spec),
        env: {
          PATH: process.env.PATH,
          DATABASE_URL: databaseUrl,
          DATABASE_SCHEMA: schemas[spec.name],
          LOG_LEVEL: 'silent',
        },
      },
      (err, stdout, stderr) =>
        err
          ? reject(new Error(`${spec.name} cli ${args[0]}: ${stderr || err.message}`))
          : resolve(JSON.parse(stdout) as T),
    ),
  )
}

const spec = (name: ServiceSpec['name']) => SERVICES.find((s) => s.name === name)!

/** How many requests for `pathPrefix` each replica of a service logged. */
function servedBy(lines: string[], service: string, pathPrefix: string): number[] {
  return Array.from(
    { length: REPLICAS },
    (_, i) =>
      serviceLogs(lines, `${service}#${i + 1}`).filter(
        (l) =>
          l.msg === 'request completed' && String((l.req as { url?: string })?.url).startsWith(pathPrefix),
      ).length,
  )
}

describeWhen(NEEDS, `pnpm start --replicas ${REPLICAS}, through Caddy`, () => {
  let stack: Launched
  let proxy: string
  let dataDir: string
  const at = (name: ServiceSpec['name']) => spec(name).defaultHost
  const send = (
    name: ServiceSpec['name'],
    method: string,
    pathname: string,
    options?: Parameters<typeof viaProxy>[4],
  ) => viaProxy(proxy, at(name), method, pathname, options)

  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'quartet-replicas-'))
    const proxyPort = await freePort()
    const env: NodeJS.ProcessEnv = {
      DATABASE_URL: databaseUrl,
      REDIS_URL: redisUrl,
      QUARTET_DATA_DIR: dataDir,
      PROXY_PORT: String(proxyPort),
      PICKUP_SHARE_ADMIN_PASSWORD: adminPassword,
      PICKUP_SHARE_UPLOAD_TOKEN_SECRET: randomBytes(32).toString('hex'),
      // The back office's sign-up without an invitation; with no SMTP_URL its mails go to the log.
      DNS_MANAGER_REGISTRATION: 'open',
    }
    for (const s of SERVICES) {
      env[`${s.envPrefix}_DATABASE_SCHEMA`] = schemas[s.name]
      env[`${s.envPrefix}_REDIS_KEY_PREFIX`] = `replicas-${run}:${s.name}:`
    }
    stack = await launchStack(env, ['--replicas', String(REPLICAS)])
    proxy = `http://127.0.0.1:${proxyPort}`
  }, 120_000)

  afterAll(async () => {
    agent.destroy()
    await stack?.stop('SIGINT')
    if (!process.env.KEEP_REPLICAS_DATA) rmSync(dataDir, { recursive: true, force: true })
    else console.log(`kept ${dataDir}`)
  })

  it('when all replicas start together on an empty schema, then each migration is applied exactly once', () => {
    for (const s of SERVICES) {
      const all = readMigrations(path.join(appDir(s), 'prisma', 'migrations')).map((m) => m.name)
      const applied = Array.from({ length: REPLICAS }, (_, i) =>
        serviceLogs(stack.lines, `${s.name}#${i + 1}`).find((l) => l.msg === 'migrations up to date'),
      )
      expect(applied.every(Boolean)).toBe(true)
      const each = applied.flatMap((l) => (l!.applied as string[]) ?? [])
      expect([s.name, [...each].sort()]).toEqual([s.name, [...all].sort()])
    }
  })

  describe('pickup-share', () => {
    let cookie = ''
    const admin = () => ({
      cookie,
      origin: `http://${at('pickup-share')}`,
      'x-requested-with': 'replicas-test',
    })

    /** Upload permission, the bytes, and the share: what the send page does. */
    async function upload(name: string, bytes: Buffer) {
      const permission = await send('pickup-share', 'POST', '/api/upload', {
        body: { store: 'blob', name, size: bytes.length, type: 'application/octet-stream' },
      })
      expect(permission.status).toBe(200)
      const issued = permission.json() as {
        pathname: string
        proof: string
        upload: { headers: Record<string, string> }
      }
      const put = await send('pickup-share', 'PUT', '/api/blob/upload', {
        headers: issued.upload.headers,
        body: bytes,
      })
      expect(put.status).toBe(201)
      return {
        name,
        size: bytes.length,
        type: 'application/octet-stream',
        pathname: issued.pathname,
        store: 'blob',
        proof: issued.proof,
      }
    }

    beforeAll(async () => {
      const login = await send('pickup-share', 'POST', '/api/admin/login', {
        headers: admin(),
        body: { password: adminPassword },
      })
      expect(login.status).toBe(200)
      cookie = String(login.headers['set-cookie']?.[0]).split(';')[0]!
      const settings = await send('pickup-share', 'PUT', '/api/admin/settings', {
        headers: admin(),
        body: { unlimitedEnabled: true },
      })
      expect(settings.status).toBe(200)
    })

    it('when the admin signs in once, then the session works on every replica', async () => {
      const before = servedBy(stack.lines, 'pickup-share', '/api/admin/shares')
      const answers = await Promise.all(
        Array.from({ length: 30 }, () =>
          send('pickup-share', 'GET', '/api/admin/shares?pageSize=5', { headers: admin() }),
        ),
      )
      expect(answers.map((a) => a.status)).toEqual(Array(30).fill(200))
      await new Promise((r) => setTimeout(r, 300))
      const after = servedBy(stack.lines, 'pickup-share', '/api/admin/shares')
      // Both replicas answered some of them.
      expect(after.map((n, i) => n - before[i]!).every((n) => n > 0)).toBe(true)
    })

    it('when 50 downloads of a 10-download share race over both replicas, then exactly 30 deliver the file (one receiver: 3 copies a download)', async () => {
      const bytes = randomBytes(64 * 1024)
      const file = await upload('race.bin', bytes)
      const share = await send('pickup-share', 'POST', '/api/share', {
        body: { files: [file], maxDownloads: 10 },
      })
      expect(share.status).toBe(200)
      const { code } = share.json() as { code: string }
      const answers = await Promise.all(
        Array.from({ length: 50 }, () =>
          send('pickup-share', 'GET', `/api/download?code=${code}&path=${encodeURIComponent(file.pathname)}`),
        ),
      )
      // Every request comes from one address (Caddy's), so they are one receiver: since issue 42
      // each download buys it at most its budget, 3 copies of a 64 KiB file, on either replica.
      const delivered = answers.filter((a) => a.status === 200 && a.body.equals(bytes))
      expect(delivered).toHaveLength(30)
      expect(answers.filter((a) => a.status === 200)).toHaveLength(30)
      for (const a of answers.filter((x) => x.status !== 200)) expect(a.status).toBeGreaterThanOrEqual(400)
      const servedDownloads = servedBy(stack.lines, 'pickup-share', '/api/download')
      expect(servedDownloads.every((n) => n > 0)).toBe(true)
    })

    it('when the connection of curl through Caddy is cut at 85 % of a download and curl -C - resumes it, then the file is exact and the one-download share spent exactly one download', async () => {
      const bytes = randomBytes(3 * 1024 * 1024)
      const file = await upload('cut.bin', bytes)
      const share = await send('pickup-share', 'POST', '/api/share', {
        body: { files: [file], maxDownloads: 1 },
      })
      expect(share.status).toBe(200)
      const { code } = share.json() as { code: string }
      const path_ = `/api/download?code=${code}&path=${encodeURIComponent(file.pathname)}`
      const out = path.join(dataDir, 'cut.bin')
      const host = ['-H', `Host: ${at('pickup-share')}`]
      // The connection dies at 85 % of the body, cut by a TCP hop the test controls between curl
      // and Caddy (curl 7.88's --limit-rate is too bursty to kill curl at a chosen byte).
      const cutAt = Math.floor(bytes.length * 0.85)
      const hop = await startCutProxy({ host: '127.0.0.1', port: Number(new URL(proxy).port) }, cutAt)
      try {
        const cut = await new Promise<number>((resolve) =>
          execFile('curl', ['-sS', ...host, '-o', out, `${hop.url}${path_}`], (err) =>
            resolve(err ? Number((err as { code?: number }).code ?? -1) : 0),
          ),
        )
        expect(cut).toBe(18) // CURLE_PARTIAL_FILE: the connection closed before the end
        expect(hop.cut).toBe(true)
      } finally {
        await hop.close()
      }
      const url = `${proxy}${path_}`
      expect(statSync(out).size).toBe(cutAt)
      expect((await send('pickup-share', 'POST', '/api/take', { body: { code } })).status).toBe(410)
      const resumed = await new Promise<{ exit: number; status: string }>((resolve) =>
        execFile('curl', ['-sS', '-w', '%{http_code}', '-C', '-', ...host, '-o', out, url], (err, stdout) =>
          resolve({ exit: err ? Number((err as { code?: number }).code ?? -1) : 0, status: String(stdout) }),
        ),
      )
      expect(resumed).toEqual({ exit: 0, status: '206' })
      expect(readFileSync(out).equals(bytes)).toBe(true)
      expect((await send('pickup-share', 'POST', '/api/take', { body: { code } })).status).toBe(410)
    })

    it('when ten shares race on one authorization code, then exactly one gets it', async () => {
      const issued = await cli<{ code: string }>(
        spec('pickup-share'),
        'authcode:create',
        '--scope',
        'both',
        '--hours',
        '1',
      )
      const files = []
      for (let i = 0; i < 10; i++) files.push(await upload(`auth-${i}.bin`, randomBytes(1024)))
      const answers = await Promise.all(
        files.map((f) =>
          send('pickup-share', 'POST', '/api/share', {
            body: { files: [f], maxDownloads: null, authCode: issued.code },
          }),
        ),
      )
      expect(answers.filter((a) => a.status === 200)).toHaveLength(1)
      expect(
        answers.filter((a) => a.status !== 200).map((a) => (a.json().error as { code: string }).code),
      ).toEqual(Array(9).fill('auth_code_used'))
    })
  })

  describe('dns-manager', () => {
    it('when a person signs up and signs in on the back office, then the page session works on every replica', async () => {
      const email = `person-${run}@example.org`
      const csrf = { origin: `http://${at('dns-manager')}`, 'x-requested-with': 'replicas-test' }
      const signup = await send('dns-manager', 'POST', '/account/api/signup', {
        headers: csrf,
        body: { email },
      })
      expect(signup.status).toBeLessThan(300)
      // The mailed link, from whichever replica wrote it to its log.
      let token: string | undefined
      for (let i = 0; i < 50 && !token; i++) {
        token = stack.lines
          .filter((l) => l.includes(email) && l.includes('mail not sent'))
          .map((l) => /[?&]token=([A-Za-z0-9_-]+)/.exec(l)?.[1])
          .find(Boolean)
        if (!token) await new Promise((r) => setTimeout(r, 100))
      }
      expect(token).toBeDefined()
      const done = await send('dns-manager', 'POST', '/account/api/signup/complete', {
        headers: csrf,
        body: { token, password: 'correct horse battery staple' },
      })
      expect(done.status).toBe(201)
      const cookie = String(done.headers['set-cookie']?.[0]).split(';')[0]!
      const before = servedBy(stack.lines, 'dns-manager', '/account/api/account')
      const answers = await Promise.all(
        Array.from({ length: 30 }, () =>
          send('dns-manager', 'GET', '/account/api/account', { headers: { cookie } }),
        ),
      )
      expect(answers.map((a) => a.status)).toEqual(Array(30).fill(200))
      await new Promise((r) => setTimeout(r, 300))
      const after = servedBy(stack.lines, 'dns-manager', '/account/api/account')
      expect(after.map((n, i) => n - before[i]!).every((n) => n > 0)).toBe(true)
    })

    it('when twelve subdomain registrations race, then the quota and the balance are exact', async () => {
      const dns = spec('dns-manager')
      const zone = `r${run}.test`
      await cli(dns, 'zones:add', zone, '--price-cents', '100', '--term-years', '1')
      // Balance for two registrations, quota for three: the balance binds.
      const poor = await cli<{ api_key: string; api_secret: string }>(
        dns,
        'accounts:create',
        '--email',
        `poor-${run}@example.org`,
        '--quota',
        '3',
        '--balance-cents',
        '250',
      )
      const auth = (a: { api_key: string; api_secret: string }) => ({
        'x-api-key': a.api_key,
        'x-api-secret': a.api_secret,
      })
      const race = (a: { api_key: string; api_secret: string }, rootdomain: string) =>
        Promise.all(
          Array.from({ length: 12 }, (_, i) =>
            send('dns-manager', 'POST', '/rest/subdomains', {
              headers: auth(a),
              body: { subdomain: `s${i}-${randomBytes(2).toString('hex')}`, rootdomain },
            }),
          ),
        )
      const outcome = (answers: Answer[]) =>
        answers
          .map((a) => (a.status === 201 ? 201 : `${a.status} ${(a.json().error as { code: string }).code}`))
          .sort()
      const paid = await race(poor, zone)
      expect(outcome(paid)).toEqual([201, 201, ...Array(10).fill('402 insufficient_balance')])
      const poorQuota = (await send('dns-manager', 'GET', '/rest/quota', { headers: auth(poor) })).json()
      expect(poorQuota).toMatchObject({ quota: { used: 2, total: 3 }, balance_cents: 50 })

      // A free zone: the quota binds.
      const free = `f${run}.test`
      await cli(dns, 'zones:add', free, '--price-cents', '0', '--term-years', '1')
      const rich = await cli<{ api_key: string; api_secret: string }>(
        dns,
        'accounts:create',
        '--email',
        `rich-${run}@example.org`,
        '--quota',
        '3',
        '--balance-cents',
        '0',
      )
      const quota = await race(rich, free)
      expect(outcome(quota)).toEqual([201, 201, 201, ...Array(9).fill('429 quota_exceeded')])
    })
  })

  describe('key-info', () => {
    it('when one usage event is sent twenty times at once over both replicas, then it is counted once', async () => {
      const keys = spec('key-info')
      const admin = await cli<{ key: string }>(
        keys,
        'keys:create',
        '--name',
        'replicas admin',
        '--management',
      )
      const created = await send('key-info', 'POST', '/api/v1/keys', {
        headers: { authorization: `Bearer ${admin.key}` },
        body: { name: 'replicas subject' },
      })
      expect(created.status).toBe(201)
      const subject = created.json() as { key: string; data: { hash: string } }
      const event = { id: `ev-${run}`, key_hash: subject.data.hash, amount: 0.125 }
      const answers = await Promise.all(
        Array.from({ length: 20 }, () =>
          send('key-info', 'POST', '/api/v1/usage', {
            headers: { authorization: `Bearer ${admin.key}` },
            body: { events: [event] },
          }),
        ),
      )
      expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200))
      const statuses = answers.map(
        (a) => (a.json().data as { results: Array<{ status: string }> }).results[0]!.status,
      )
      expect(statuses.filter((s) => s === 'accepted')).toHaveLength(1)
      expect(statuses.filter((s) => s === 'duplicate')).toHaveLength(19)
      const key = await send('key-info', 'GET', '/api/v1/key', {
        headers: { authorization: `Bearer ${subject.key}` },
      })
      expect((key.json().data as { usage: number }).usage).toBeCloseTo(0.125, 9)
    })
  })

  it('when the launcher gets SIGHUP under load, then every replica restarts one at a time and no request fails', async () => {
    const restartsBefore = stack.lines.filter((l) => /restarted and ready/.test(l)).length
    const failures: string[] = []
    /** A service's own 503 + Retry-After (a dependency slow while processes restart): honest, but counted. */
    let busy = 0
    let sent = 0
    let running = true
    const loops = [
      () => send('design-archive', 'GET', '/design-api/v1/manifest.json'),
      () => send('key-info', 'GET', '/healthz'),
      () => send('dns-manager', 'GET', '/rest/system'),
      () => send('pickup-share', 'GET', '/api/site'),
      () => send('pickup-share', 'POST', '/api/take', { body: { code: '000000000000' } }),
    ].map(async (request) => {
      while (running) {
        sent++
        try {
          const a = await request()
          // Wrong pickup codes may be limited (429). A cut connection, or a 5xx from the proxy
          // (no upstream taken it, a reset) is a failure.
          const own = a.status === 503 && a.headers['retry-after'] && a.body.includes('service_unavailable')
          if (own) busy++
          else if (a.status >= 500) failures.push(`${a.status} ${a.body.toString('utf8').slice(0, 200)}`)
        } catch (err) {
          failures.push((err as Error).message)
        }
      }
    })
    await new Promise((r) => setTimeout(r, 500))
    // The launcher itself (pnpm start runs it under tsx) names its pid for this.
    const pid = Number(/kill -HUP (\d+)/.exec(stack.lines.join('\n'))?.[1])
    expect(pid).toBeGreaterThan(0)
    process.kill(pid, 'SIGHUP')
    const deadline = Date.now() + 150_000
    while (Date.now() < deadline && !stack.lines.some((l) => /rolling restart done/.test(l)))
      await new Promise((r) => setTimeout(r, 200))
    await new Promise((r) => setTimeout(r, 500))
    running = false
    await Promise.all(loops)
    const launcher = stack.lines.filter((l) => l.startsWith('stack'))
    if (!launcher.some((l) => /rolling restart done/.test(l))) throw new Error(launcher.join('\n'))
    expect(stack.lines.filter((l) => /restarted and ready/.test(l)).length - restartsBefore).toBe(
      SERVICES.length * REPLICAS,
    )
    expect({ sent: sent > 100, failures }).toEqual({ sent: true, failures: [] })
    expect(busy).toBeLessThanOrEqual(Math.ceil(sent * 0.01))
  }, 240_000)
})

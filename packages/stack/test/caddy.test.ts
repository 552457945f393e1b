import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import { describeWhen } from '@quartet/core/testing'
import { REPO_ROOT, SERVICES } from '../src/services.ts'
import { freePort, type Launched, launchStack, serviceLogs } from './launch.ts'

/**
 * Debian's caddy with the very Caddyfile docker-compose uses, in front of the four services on
 * loopback. Requests go through node's http client so the Host header and the source address are
 * ours to choose.
 */
const CADDY = { programs: [{ name: 'caddy', debian: 'caddy', runs: ['version'] }] }
const CADDYFILE = path.join(REPO_ROOT, 'infra/caddy/Caddyfile')
const HOST_ENV: Record<string, string> = {
  'design-archive': 'DESIGN',
  'key-info': 'KEYS',
  'dns-manager': 'DNS',
  'pickup-share': 'SHARE',
}

function get(options: http.RequestOptions): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ method: 'GET', ...options }, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (c: string) => (body += c))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }))
    })
    req.on('error', reject)
    req.end()
  })
}

describeWhen(CADDY, 'caddy in front of the four services', () => {
  let stack: Launched
  let caddy: ChildProcess
  let proxyPort: number
  let caddyDir: string
  const caddyOutput: string[] = []

  beforeAll(async () => {
    caddyDir = mkdtempSync(path.join(os.tmpdir(), 'quartet-caddy-'))
    stack = await launchStack({ QUARTET_DATA_DIR: path.join(caddyDir, 'data') })
    proxyPort = await freePort()
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      HOME: caddyDir,
      XDG_CONFIG_HOME: caddyDir,
      XDG_DATA_HOME: caddyDir,
      PROXY_PORT: String(proxyPort),
    }
    for (const spec of SERVICES)
      env[`${HOST_ENV[spec.name]}_UPSTREAM`] = `127.0.0.1:${stack.ports[spec.name]}`
    caddy = spawn('caddy', ['run', '--config', CADDYFILE, '--adapter', 'caddyfile'], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    caddy.stdout!.on('data', (c: Buffer) => caddyOutput.push(c.toString()))
    caddy.stderr!.on('data', (c: Buffer) => caddyOutput.push(c.toString()))
    const deadline = Date.now() + 15_000
    for (;;) {
      try {
        await get({
          host: '127.0.0.1',
          port: proxyPort,
          path: '/healthz',
          headers: { host: 'keys.localhost' },
        })
        break
      } catch (err) {
        if (Date.now() > deadline)
          throw new Error(`caddy did not start: ${caddyOutput.join('')} ${String(err)}`, { cause: err })
        await new Promise((r) => setTimeout(r, 200))
      }
    }
  })

  afterAll(async () => {
    caddy?.kill('SIGTERM')
    await stack?.stop()
    rmSync(caddyDir, { recursive: true, force: true })
  })

  it.each(SERVICES.map((s) => [s.defaultHost, s.name]))(
    'when the Host is %s, then %s answers',
    async (host, name) => {
      const res = await get({
        host: '127.0.0.1',
        port: proxyPort,
        path: '/openapi.json',
        headers: { host },
      })
      expect(res.status).toBe(200)
      // Each service names itself in its OpenAPI document.
      expect(JSON.parse(res.body).info.title).toContain(name)
      // Metrics are for the scraper's own port, never the public one behind the proxy.
      const metrics = await get({ host: '127.0.0.1', port: proxyPort, path: '/metrics', headers: { host } })
      expect(metrics.status).toBe(404)
    },
  )

  it("when dns-manager's back office is asked through caddy, then its API answers and a same-site write passes the CSRF check", async () => {
    const host = `dns.localhost:${proxyPort}`
    const site = await get({
      host: '127.0.0.1',
      port: proxyPort,
      path: '/account/api/site',
      headers: { host },
    })
    expect(site.status).toBe(200)
    expect(JSON.parse(site.body)).toMatchObject({ success: true, registration: 'invite' })
    // The browser's Origin names the proxy's host; the service sees the same Host behind caddy.
    const signin = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = http.request(
        {
          method: 'POST',
          host: '127.0.0.1',
          port: proxyPort,
          path: '/account/api/signin',
          headers: {
            host,
            origin: `http://${host}`,
            'sec-fetch-site': 'same-origin',
            'x-requested-with': 'fetch',
            'content-type': 'application/json',
          },
        },
        (res) => {
          let body = ''
          res.setEncoding('utf8')
          res.on('data', (c: string) => (body += c))
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }))
        },
      )
      req.on('error', reject)
      req.end(JSON.stringify({ email: 'nobody@example.test', password: 'not a password' }))
    })
    expect(signin.status).toBe(401)
    expect(JSON.parse(signin.body).error.code).toBe('auth_invalid_password')
  })

  it('when the Host is unknown, then caddy answers 404 in JSON', async () => {
    const res = await get({
      host: '127.0.0.1',
      port: proxyPort,
      path: '/healthz',
      headers: { host: 'nobody.localhost' },
    })
    expect(res.status).toBe(404)
    expect(JSON.parse(res.body)).toEqual({ error: { code: 'not_found', message: 'unknown host' } })
  })

  it('when a client spoofs X-Forwarded-For, then the service sees the address caddy reports instead', async () => {
    const requestId = `caddy-xff-${Date.now()}`
    // Connect from 127.0.0.2, so the address caddy reports differs from caddy's own (127.0.0.1).
    const res = await get({
      host: '127.0.0.1',
      port: proxyPort,
      localAddress: '127.0.0.2',
      path: '/healthz',
      headers: { host: 'keys.localhost', 'x-forwarded-for': '203.0.113.9', 'x-request-id': requestId },
    })
    expect(res.status).toBe(200)
    let line: Record<string, unknown> | undefined
    for (let i = 0; i < 50 && !line; i++) {
      line = serviceLogs(stack.lines, 'key-info').find((l) => l.req_id === requestId)
      if (!line) await new Promise((r) => setTimeout(r, 50))
    }
    expect(line?.ip).toBe('127.0.0.2')
  })
})

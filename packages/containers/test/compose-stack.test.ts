import { spawn, spawnSync } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import http from 'node:http'
import net from 'node:net'
import path from 'node:path'
import { describeWhen } from '@quartet/core/testing'

// The compose stack as an operator runs it, on a machine with no image registry: the base image
// made locally (infra/docker/make-base-image.sh), stand-ins for the third-party images made from
// Debian packages (fixtures/standins, never shipped), the four images built by Debian's
// docker-compose 1.29 from the project's own Dockerfile, and every request through Caddy by host
// name. Everything it makes has this run's project name and is removed at the end, except the
// images (kept so that the next run is warm).

const ROOT = path.resolve(__dirname, '../../..')
const FIXTURES = path.join(__dirname, 'fixtures')
const BASE_IMAGE = 'node:24-bookworm-slim'
const STANDINS_IMAGE = 'quartet-test/standins:local'
const APPS = ['design-archive', 'key-info', 'dns-manager', 'pickup-share'] as const
const PROJECT = `quartet-ctest-${process.pid}`
const COMPOSE_FILES = [
  'docker-compose.yml',
  'docker-compose.s3.yml',
  path.relative(ROOT, path.join(FIXTURES, 'compose.standins.yml')),
].flatMap((f) => ['-f', f])

const have = (cmd: string, args: string[]) => spawnSync(cmd, args, { stdio: 'ignore' }).status === 0
const NEEDS = {
  programs: [
    {
      name: 'docker',
      debian: 'docker.io',
      runs: ['info', '--format', '{{.ServerVersion}}'],
      hint: 'its engine must answer: .ci/run starts dockerd; locally, start docker',
    },
    { name: 'docker-compose', debian: 'docker-compose', runs: ['version', '--short'] },
    { name: 'dig', debian: 'dnsutils' },
  ],
}

// ---------------------------------------------------------------------------------------------
// Programs

interface Output {
  code: number
  stdout: string
  stderr: string
}

function run(
  cmd: string,
  args: string[],
  options: { env?: NodeJS.ProcessEnv; check?: boolean; log?: boolean } = {},
): Promise<Output> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: ROOT, env: options.env ?? process.env })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (c) => {
      stdout += c
      if (options.log) process.stdout.write(c)
    })
    child.stderr.on('data', (c) => {
      stderr += c
      if (options.log) process.stderr.write(c)
    })
    child.on('error', reject)
    child.on('close', (code) => {
      const out = { code: code ?? -1, stdout, stderr }
      if (options.check !== false && out.code !== 0)
        reject(new Error(`${cmd} ${args.join(' ')} → exit ${out.code}\n${stderr.slice(-4000)}`))
      else resolve(out)
    })
  })
}

let composeEnv: NodeJS.ProcessEnv = {}
const compose = (args: string[], options: { check?: boolean; log?: boolean } = {}) =>
  run('docker-compose', ['-p', PROJECT, ...COMPOSE_FILES, ...args], { ...options, env: composeEnv })

/** The JSON document an operator command prints. */
async function cli(service: string, args: string[]): Promise<Record<string, unknown>> {
  const { stdout } = await compose(['exec', '-T', service, 'node', 'dist/cli.js', ...args])
  return JSON.parse(stdout)
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

async function waitFor<T>(what: string, ms: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + ms
  let last: unknown
  for (;;) {
    try {
      const value = await probe()
      if (value !== undefined) return value
    } catch (err) {
      last = err
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${last}` : ''}`)
    await sleep(1000)
  }
}

// ---------------------------------------------------------------------------------------------
// Free host ports and a subnet no other network uses

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer()
    server.on('error', reject)
    server.listen(0, '0.0.0.0', () => {
      const { port } = server.address() as net.AddressInfo
      server.close(() => resolve(port))
    })
  })
}

const ipv4 = (a: string) => a.split('.').reduce((n, part) => n * 256 + Number(part), 0)
function cidr(range: string): [number, number] {
  const [address = '', bits = '32'] = range.split('/')
  const size = 2 ** (32 - Number(bits))
  const start = ipv4(address) - (ipv4(address) % size)
  return [start, start + size - 1]
}

async function freeSubnet(): Promise<string> {
  const ids = (await run('docker', ['network', 'ls', '-q'])).stdout.split('\n').filter(Boolean)
  const used = (
    await run('docker', ['network', 'inspect', '-f', '{{range .IPAM.Config}}{{.Subnet}} {{end}}', ...ids])
  ).stdout
    .split(/\s+/)
    .filter((s) => /^\d+\.\d+\.\d+\.\d+\/\d+$/.test(s))
  const routes = (await run('ip', ['-4', 'route'], { check: false })).stdout
  used.push(...(routes.match(/^\d+\.\d+\.\d+\.\d+\/\d+/gm) ?? []))
  const taken = used.map(cidr)
  for (let i = 0; i < 64; i++) {
    const candidate = `172.30.${160 + ((process.pid + i) % 64)}.0/24`
    const [a, b] = cidr(candidate)
    if (taken.every(([c, d]) => b < c || a > d)) return candidate
  }
  throw new Error(`no free /24 in 172.30.160.0/19 (in use: ${used.join(', ')})`)
}

// ---------------------------------------------------------------------------------------------
// HTTP through Caddy: every request goes to 127.0.0.1:PROXY_PORT with the service's Host header

let proxyPort = 0
const HOSTS = {
  design: 'design.localhost',
  keys: 'keys.localhost',
  dns: 'dns.localhost',
  share: 'share.localhost',
}

interface Reply {
  status: number
  headers: http.IncomingHttpHeaders
  body: Buffer
}

function request(
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: Buffer; agent?: http.Agent } = {},
): Promise<Reply> {
  const target = new URL(url)
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port: proxyPort,
        method: options.method ?? 'GET',
        path: target.pathname + target.search,
        headers: {
          host: target.host,
          ...(options.body ? { 'content-length': String(options.body.length) } : {}),
          ...options.headers,
        },
        agent: options.agent,
      },
      (res) => {
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
        )
        res.on('error', reject)
      },
    )
    req.on('error', reject)
    req.end(options.body)
  })
}

// Answers are read field by field in the assertions.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Body = Record<string, any>

const site = (host: string) => `http://${host}:${proxyPort}`

async function api(
  host: string,
  method: string,
  pathname: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Body }> {
  const reply = await request(site(host) + pathname, {
    method,
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : Buffer.from(JSON.stringify(body)),
  })
  const text = reply.body.toString('utf8')
  let parsed: Body
  try {
    parsed = text ? JSON.parse(text) : {}
  } catch {
    parsed = { text }
  }
  return { status: reply.status, headers: reply.headers, body: parsed }
}

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex')

// ---------------------------------------------------------------------------------------------
// pickup-share's uploader, as apps/pickup-share/README.md describes the API: one place to adapt
// when the upload or share requests change.

type Store = 'blob' | 'bucket' | 'repo'
interface SharedFile {
  code: string
  token: string
  pathname: string
}

async function uploadAndShare(store: Store, name: string, data: Buffer, type: string): Promise<SharedFile> {
  // 1. POST /api/upload → the permission (where and how to send the bytes)
  const grant = await api(HOSTS.share, 'POST', '/api/upload', { store, name, size: data.length, type })
  if (grant.status !== 200)
    throw new Error(`upload permission (${store}): ${grant.status} ${JSON.stringify(grant.body)}`)
  const { upload, pathname } = grant.body as {
    pathname: string
    upload: { url: string; method: string; headers?: Record<string, string>; fields?: Record<string, string> }
  }
  // 2. The bytes: a PUT with the token (blob and repo: to pickup-share itself) or the presigned
  //    POST form (bucket: to the S3 server, through Caddy's s3.localhost site).
  const target = new URL(upload.url, site(HOSTS.share)).toString()
  let sent: Reply
  if (upload.method === 'PUT') {
    sent = await request(target, { method: 'PUT', headers: upload.headers ?? {}, body: data })
  } else {
    const form = new FormData()
    for (const [k, v] of Object.entries(upload.fields ?? {})) form.append(k, v)
    form.append('file', new Blob([new Uint8Array(data)], { type }), name)
    const encoded = new Response(form)
    sent = await request(target, {
      method: 'POST',
      headers: { 'content-type': encoded.headers.get('content-type') ?? '' },
      body: Buffer.from(await encoded.arrayBuffer()),
    })
  }
  if (sent.status < 200 || sent.status >= 300)
    throw new Error(`upload (${store}) to ${target}: ${sent.status} ${sent.body.toString().slice(0, 500)}`)
  // 3. POST /api/share with the uploaded file → code and link token
  const shared = await api(HOSTS.share, 'POST', '/api/share', {
    files: [{ name, size: data.length, type, pathname, store }],
    maxDownloads: 1,
  })
  if (shared.status !== 200)
    throw new Error(`share (${store}): ${shared.status} ${JSON.stringify(shared.body)}`)
  return { code: shared.body.code, token: shared.body.token, pathname }
}

// ---------------------------------------------------------------------------------------------

async function containerOf(service: string): Promise<string> {
  const [id] = (await compose(['ps', '-q', service])).stdout.trim().split('\n')
  if (!id) throw new Error(`no container for ${service}`)
  return id
}

const inspect = async (id: string, format: string) =>
  (await run('docker', ['inspect', '-f', format, id])).stdout.trim()

/**
 * Every service running and healthy (by its healthcheck, when it has one); minio-init done.
 * A service may be unhealthy or restarting for a while (its dependencies starting, a loaded
 * machine making a check late): only the time limit decides.
 */
let services: string[] = []
async function stackReady(): Promise<boolean | undefined> {
  const ids = (await compose(['ps', '-q'])).stdout.split('\n').filter(Boolean)
  const states = await Promise.all(
    ids.map((id) =>
      inspect(
        id,
        '{{index .Config.Labels "com.docker.compose.service"}} {{.State.Status}} {{.State.ExitCode}} {{if .State.Health}}{{.State.Health.Status}}{{else}}none{{end}}',
      ),
    ),
  )
  let ready = states.length === services.length
  for (const line of states) {
    const [service, status, exitCode, health] = line.split(' ')
    if (service === 'minio-init') {
      if (status === 'exited' && exitCode !== '0') throw new Error(`minio-init exited ${exitCode}`)
      ready &&= status === 'exited'
    } else {
      ready &&= status === 'running' && (health === 'healthy' || health === 'none')
    }
  }
  if (!ready) throw new Error(states.join(', '))
  return true
}

const extraContainers: string[] = []

describeWhen(NEEDS, 'the compose stack in containers (docker-compose.yml + docker-compose.s3.yml)', () => {
  beforeAll(async () => {
    if (!have('docker', ['image', 'inspect', BASE_IMAGE])) {
      if (process.getuid?.() !== 0)
        throw new Error(`${BASE_IMAGE} is missing: run sudo infra/docker/make-base-image.sh once`)
      await run(path.join(ROOT, 'infra/docker/make-base-image.sh'), [], { log: true })
    }
    await run('docker', ['build', '-q', '-t', STANDINS_IMAGE, path.join(FIXTURES, 'standins')])

    proxyPort = await freePort()
    const subnet = await freeSubnet()
    const prefix = subnet.split('.').slice(0, 3).join('.')
    composeEnv = {
      ...process.env,
      PROXY_PORT: String(proxyPort),
      PDNS_DNS_PORT: String(await freePort()),
      MINIO_CONSOLE_PORT: String(await freePort()),
      QUARTET_SUBNET: subnet,
      QUARTET_IP_RANGE: `${prefix}.128/25`,
      CADDY_ADDRESS: `${prefix}.10`,
      PICKUP_SHARE_REPO_REMOTE_URL: 'http://git:8000/quartet/shares.git',
      PICKUP_SHARE_REPO_TOKEN: randomBytes(16).toString('hex'),
    }
    // The four images from infra/docker/Dockerfile (legacy builder: docker-compose 1.29's own)
    await compose(['build'])
    // Every service `up` starts: all but the monitoring profile's Prometheus.
    services = (await compose(['config', '--services'])).stdout
      .split('\n')
      .filter((name) => name && name !== 'prometheus')
    await compose(['up', '-d'])
    try {
      await waitFor('every service healthy', 600_000, stackReady)
    } catch (err) {
      console.error((await compose(['logs', '--no-color', '--tail', '150'], { check: false })).stdout)
      throw err
    }
  })

  afterAll(async () => {
    for (const name of extraContainers) await run('docker', ['rm', '-f', name], { check: false })
    if (composeEnv.PROXY_PORT) await compose(['down', '-v', '--remove-orphans'], { check: false })
  })

  it('when design-archive serves a document through Caddy, then it has an ETag and If-None-Match gives 304', async () => {
    const first = await request(`${site(HOSTS.design)}/design-api/v1/terms.json`)
    expect(first.status).toBe(200)
    expect(JSON.parse(first.body.toString('utf8'))).toBeInstanceOf(Object)
    const etag = String(first.headers.etag)
    expect(etag).toMatch(/^"[0-9a-f]{64}"$/)
    const again = await request(`${site(HOSTS.design)}/design-api/v1/terms.json`, {
      headers: { 'if-none-match': etag },
    })
    expect(again.status).toBe(304)
    expect(again.headers.etag).toBe(etag)
    expect(again.body.length).toBe(0)
  })

  let apiKey = ''
  it('when an operator makes a key with key-info’s CLI in its container, then GET /api/v1/key answers with it', async () => {
    const made = await cli('key-info', ['keys:create', '--name', 'container-test', '--limit', '5'])
    apiKey = String(made.key)
    expect(apiKey).toMatch(/^sk-qk-v1-/)
    const res = await api(HOSTS.keys, 'GET', '/api/v1/key', undefined, { authorization: `Bearer ${apiKey}` })
    expect(res.status).toBe(200)
    expect(res.body.data).toMatchObject({ limit: 5 })
    expect((await api(HOSTS.keys, 'GET', '/api/v1/key')).status).toBe(401)
  })

  it('when dns-manager creates a subdomain and an A record, then PowerDNS answers it to dig', async () => {
    await cli('dns-manager', ['zones:add', 'example.org', '--price-cents', '0'])
    const account = await cli('dns-manager', ['accounts:create', '--email', 'ops@example.org'])
    const auth = { 'x-api-key': String(account.api_key), 'x-api-secret': String(account.api_secret) }
    const sub = await api(
      HOSTS.dns,
      'POST',
      '/rest/subdomains',
      { subdomain: 'box', rootdomain: 'example.org' },
      auth,
    )
    expect(sub).toMatchObject({ status: 201 })
    const id = sub.body.subdomain.id
    const rec = await api(
      HOSTS.dns,
      'POST',
      `/rest/subdomains/${id}/records`,
      { type: 'A', name: 'www', content: '93.184.216.77', ttl: 300 },
      auth,
    )
    expect(rec).toMatchObject({ status: 201 })
    const dig = await run('dig', [
      '@127.0.0.1',
      '-p',
      String(composeEnv.PDNS_DNS_PORT),
      '+short',
      '+tries=3',
      'www.box.example.org',
      'A',
    ])
    expect(dig.stdout.trim()).toBe('93.184.216.77')
  })

  it.each(['blob', 'bucket', 'repo'] as const)(
    'when a file goes through pickup-share’s %s store (upload → share → take → download), then the bytes come back exactly',
    async (store) => {
      const data = randomBytes(300_000)
      const name = `report-${store}.bin`
      const shared = await uploadAndShare(store, name, data, 'application/octet-stream')
      const taken = await api(HOSTS.share, 'POST', '/api/take', { code: shared.code })
      expect(taken.status).toBe(200)
      expect(taken.body.manifest.files).toEqual([
        expect.objectContaining({ name, size: data.length, path: shared.pathname }),
      ])
      const download = await request(
        `${site(HOSTS.share)}/api/download?token=${shared.token}&path=${encodeURIComponent(shared.pathname)}`,
      )
      expect(download.status).toBe(200)
      expect(download.body.length).toBe(data.length)
      expect(sha256(download.body)).toBe(sha256(data))
      expect((await api(HOSTS.share, 'POST', '/api/take', { code: shared.code })).status).toBe(410)
    },
  )

  it('when key-info is restarted replica by replica while requests go through Caddy, then no request fails', async () => {
    // A rolling restart: a second replica first (Caddy balances the addresses compose gives the
    // service's name), then each one restarted while the other serves. One replica alone leaves a
    // gap as long as its start, which Caddy bridges only for lb_try_duration (5 s).
    const first = await containerOf('key-info')
    await compose(['up', '-d', '--no-recreate', '--scale', 'key-info=2', 'key-info'])
    const replicas = (await compose(['ps', '-q', 'key-info'])).stdout.trim().split('\n')
    expect(replicas).toHaveLength(2)
    expect(replicas).toContain(first)
    const healthy = (id: string) => async () =>
      (await inspect(id, '{{.State.Health.Status}}')) === 'healthy' || undefined
    for (const id of replicas) await waitFor(`replica ${id} healthy`, 180_000, healthy(id))

    const agent = new http.Agent({ keepAlive: true, maxSockets: 4 })
    const statuses: Array<number | string> = []
    let stop = false
    const load = async () => {
      while (!stop) {
        try {
          const res = await request(`${site(HOSTS.keys)}/api/v1/key`, {
            headers: { authorization: `Bearer ${apiKey}` },
            agent,
          })
          statuses.push(res.status)
        } catch (err) {
          statuses.push(String(err))
        }
        // Two clients, four requests a second each: within the key's 600 a minute.
        await sleep(250)
      }
    }
    const workers = Array.from({ length: 2 }, load)
    await waitFor('requests before the restart', 30_000, async () => statuses.length >= 8 || undefined)
    const before = statuses.length
    for (const id of replicas) {
      const startedBefore = await inspect(id, '{{.State.StartedAt}}')
      await run('docker', ['restart', '-t', '30', id])
      expect(await inspect(id, '{{.State.StartedAt}}')).not.toBe(startedBefore)
      await waitFor(`replica ${id} healthy again`, 180_000, healthy(id))
    }
    const atEnd = statuses.length
    // Both restarted processes answer before the load stops.
    await waitFor('answers after the restarts', 60_000, async () => statuses.length >= atEnd + 8 || undefined)
    stop = true
    await Promise.all(workers)
    agent.destroy()
    // Back to the stack's shape: one replica.
    await compose(['up', '-d', '--no-recreate', '--scale', 'key-info=1', 'key-info'])
    expect(atEnd).toBeGreaterThan(before)
    expect(statuses.filter((s) => s !== 200)).toEqual([])
  })

  it('when each image runs with a read-only root and no capabilities, then it runs as uid 1000, gets healthy by its HEALTHCHECK and exits 0 on SIGTERM', async () => {
    // The four at once: each is a second instance of its compose service (same environment, same
    // network), as `docker run` gives it: no init, root filesystem read-only, /tmp (and
    // pickup-share's /data folders) writable, as the Kubernetes deployments mount them.
    const properties = async (app: (typeof APPS)[number]) => {
      const image = `quartet/${app}:local`
      const user = await inspect(image, '{{.Config.User}}')
      const uid = (await run('docker', ['run', '--rm', '--entrypoint', 'id', image, '-u'])).stdout.trim()
      const composed = await containerOf(app)
      const env = JSON.parse(await inspect(composed, '{{json .Config.Env}}')) as string[]
      const network = await inspect(
        composed,
        '{{range $name, $_ := .NetworkSettings.Networks}}{{$name}}{{end}}',
      )
      const name = `${PROJECT}-readonly-${app}`
      extraContainers.push(name)
      const writable = app === 'pickup-share' ? ['/data/blobs', '/data/repos'] : []
      await run('docker', [
        'run',
        '-d',
        '--name',
        name,
        '--network',
        network,
        '--read-only',
        '--cap-drop',
        'ALL',
        // The image's HEALTHCHECK command; more time for it on a loaded machine (see compose.standins.yml)
        '--health-interval',
        '5s',
        '--health-timeout',
        '30s',
        '--tmpfs',
        '/tmp',
        ...writable.flatMap((dir) => ['--tmpfs', `${dir}:uid=1000,gid=1000`]),
        ...env.flatMap((e) => ['-e', e]),
        image,
      ])
      await waitFor(`${name} healthy`, 300_000, async () => {
        const state = await inspect(name, '{{.State.Status}} {{.State.Health.Status}}')
        if (state !== 'running healthy') throw new Error(state)
        return true
      })
      // docker stop sends SIGTERM and, after the grace period (30 s, as in compose), SIGKILL (137).
      await run('docker', ['stop', '-t', '30', name])
      const stopped = await inspect(name, 'exit {{.State.ExitCode}}, OOM killed {{.State.OOMKilled}}')
      return { app, user, uid, stopped }
    }
    expect(await Promise.all(APPS.map(properties))).toEqual(
      APPS.map((app) => ({ app, user: 'node', uid: '1000', stopped: 'exit 0, OOM killed false' })),
    )
  })
})

import { randomBytes } from 'node:crypto'
import type { FaultStack } from '@quartet/faults/stack'
import type { Hints } from './schema.ts'

/**
 * What the suite made in its setup, as an operator and honest clients would, so that
 * generated requests reach the authenticated paths and real rows: keys, an account with a
 * subdomain and a record, admin sessions, shares, upload permissions, authorization codes.
 */
export interface Fixtures {
  keyInfo: {
    /** A management key (for /api/v1/keys and /api/v1/usage). */
    admin: string
    /** An ordinary key (for GET /api/v1/key). */
    subject: string
    hints: Hints
  }
  dns: {
    apiKey: string
    apiSecret: string
    zone: string
    subdomainId: number
    recordId: number
    hints: Hints
  }
  pickup: {
    url: string
    adminPassword: string
    /** The session every admin request uses; never logged out. */
    session: string
    /** Sessions the logout operation may end, one per run while they last. */
    spareSessions: string[]
    /** Upload tokens of permissions whose bytes were never sent (for PUT /api/blob/upload). */
    uploadTokens: Array<{ token: string; size: number }>
    hints: Hints
    /** Hints for anonymous callers (no admin password). */
    anonymousHints: Hints
  }
}

interface Answer<T> {
  status: number
  body: T
  headers: Headers
}

async function call<T = Record<string, unknown>>(
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: unknown; raw?: Buffer } = {},
): Promise<Answer<T>> {
  const json = init.body !== undefined
  const res = await fetch(url, {
    method: init.method ?? (json || init.raw ? 'POST' : 'GET'),
    headers: { ...(json ? { 'content-type': 'application/json' } : {}), ...init.headers },
    body: json ? JSON.stringify(init.body) : init.raw,
    signal: AbortSignal.timeout(30_000),
  })
  const text = await res.text()
  let body: unknown = text
  try {
    body = JSON.parse(text)
  } catch {
    // not JSON
  }
  return { status: res.status, body: body as T, headers: res.headers }
}

function expect<T>(what: string, answer: Answer<T>, status: number): T {
  if (answer.status !== status)
    throw new Error(
      `fuzz setup: ${what} answered ${answer.status}: ${JSON.stringify(answer.body).slice(0, 500)}`,
    )
  return answer.body
}

export async function makeFixtures(stack: FaultStack): Promise<Fixtures> {
  const [keyInfo, dns, pickup] = await Promise.all([
    keyInfoFixtures(stack),
    dnsFixtures(stack),
    pickupFixtures(stack),
  ])
  return { keyInfo, dns, pickup }
}

async function keyInfoFixtures(stack: FaultStack): Promise<Fixtures['keyInfo']> {
  const service = stack.services['key-info']
  const admin = await service.cli<{ key: string; hash: string }>(
    'keys:create',
    '--name',
    'fuzz admin',
    '--management',
  )
  const auth = { authorization: `Bearer ${admin.key}` }
  const made: Array<{ key: string; data: { hash: string } }> = []
  for (const name of ['fuzz subject', 'fuzz victim 1', 'fuzz victim 2']) {
    made.push(
      expect(
        `key-info POST /api/v1/keys`,
        await call<{ key: string; data: { hash: string } }>(`${service.url}/api/v1/keys`, {
          headers: auth,
          body: { name, limit: 100 },
        }),
        201,
      ),
    )
  }
  const hashes = made.map((m) => m.data.hash)
  return {
    admin: admin.key,
    subject: made[0]!.key,
    // The admin key's own hash is left out: a generated PATCH or DELETE must not disable the
    // key every authenticated request uses.
    hints: { hash: hashes, key_hash: [hashes[0]!] },
  }
}

async function dnsFixtures(stack: FaultStack): Promise<Fixtures['dns']> {
  const service = stack.services['dns-manager']
  const zone = 'fuzz.example'
  const account = await service.cli<{ account_id: string; api_key: string; api_secret: string }>(
    'accounts:create',
    '--email',
    'fuzz@example.org',
    '--quota',
    '100000',
    '--balance-cents',
    '100000000',
  )
  await service.cli('zones:add', zone, '--price-cents', '1', '--term-years', '1')
  const auth = { 'x-api-key': account.api_key, 'x-api-secret': account.api_secret }
  const sub = expect(
    'dns-manager POST /rest/subdomains',
    await call<{ subdomain: { id: number } }>(`${service.url}/rest/subdomains`, {
      headers: auth,
      body: { subdomain: 'home', rootdomain: zone },
    }),
    201,
  )
  const record = expect(
    'dns-manager POST records',
    await call<{ dns_record: { id: number } }>(`${service.url}/rest/subdomains/${sub.subdomain.id}/records`, {
      headers: auth,
      body: { type: 'TXT', name: '@', content: 'fuzz' },
    }),
    201,
  )
  const spareKeys: string[] = []
  for (let i = 0; i < 2; i++) {
    const key = expect(
      'dns-manager POST /rest/keys',
      await call<{ key: { id: string } }>(`${service.url}/rest/keys`, { method: 'POST', headers: auth }),
      201,
    )
    spareKeys.push(key.key.id)
  }
  return {
    apiKey: account.api_key,
    apiSecret: account.api_secret,
    zone,
    subdomainId: sub.subdomain.id,
    recordId: record.dns_record.id,
    // The account's own key id is left out: a generated delete or regenerate must not end the
    // credentials every authenticated request uses.
    hints: {
      id: [sub.subdomain.id, record.dns_record.id, ...spareKeys],
      subdomain_id: [sub.subdomain.id],
      rootdomain: [zone],
      domain: [`home.${zone}`, zone, `free.${zone}`],
      subdomain: ['home', 'www', 'x'],
    },
  }
}

async function pickupFixtures(stack: FaultStack): Promise<Fixtures['pickup']> {
  const service = stack.services['pickup-share']
  const url = service.url
  const login = async () => {
    const res = await call(`${url}/api/admin/login`, {
      headers: { origin: url, 'x-requested-with': 'fuzz' },
      body: { password: stack.adminPassword },
    })
    expect('pickup-share admin login', res, 200)
    const cookie = res.headers.get('set-cookie')?.split(';')[0]
    if (!cookie) throw new Error('fuzz setup: pickup-share login set no cookie')
    return cookie
  }
  const session = await login()
  const admin = { cookie: session, origin: url, 'x-requested-with': 'fuzz' }
  const spareSessions: string[] = []
  for (let i = 0; i < 3; i++) spareSessions.push(await login())
  expect(
    'pickup-share settings',
    await call(`${url}/api/admin/settings`, {
      method: 'PUT',
      headers: admin,
      body: {
        maxDownloadsCap: 1_000_000,
        unlimitedEnabled: true,
        takeFailuresPerIp: 1_000_000,
        takeFailuresGlobal: 100_000_000,
        guessThrottlePerMinute: 100_000,
        loginAttemptsPerIp: 1000,
        loginFailuresPerAccount: 100_000,
        loginFailuresGlobal: 1_000_000,
      },
    }),
    200,
  )
  const authCodes: Array<{ code: string; id: string }> = []
  for (let i = 0; i < 3; i++)
    authCodes.push(
      expect(
        'pickup-share POST /api/admin/authcodes',
        await call<{ code: string; id: string }>(`${url}/api/admin/authcodes`, {
          headers: admin,
          body: { expiresInHours: 24, scope: 'both', note: `fuzz ${i}` },
        }),
        201,
      ),
    )

  const permission = async (i: number) => {
    const body = expect(
      'pickup-share POST /api/upload',
      await call<{ pathname: string; proof: string; upload: { headers: Record<string, string> } }>(
        `${url}/api/upload`,
        { body: { store: 'blob', name: `fuzz-${i}.bin`, size: 16, type: 'application/octet-stream' } },
      ),
      200,
    )
    return { pathname: body.pathname, proof: body.proof, headers: body.upload.headers }
  }
  const uploaded: string[] = []
  /** The uploader's proof of each uploaded pathname (POST /api/share takes a file only with it). */
  const proofs = new Map<string, string>()
  const uploadTokens: Array<{ token: string; size: number }> = []
  for (let i = 0; i < 40; i++) {
    const p = await permission(i)
    if (i % 2 === 0) {
      expect(
        'pickup-share PUT /api/blob/upload',
        await call(`${url}/api/blob/upload`, { method: 'PUT', headers: p.headers, raw: randomBytes(16) }),
        201,
      )
      uploaded.push(p.pathname)
      proofs.set(p.pathname, p.proof)
    } else uploadTokens.push({ token: p.headers['x-upload-token']!, size: 16 })
  }
  const share = async (pathname: string) =>
    expect(
      'pickup-share POST /api/share',
      await call<{ code: string; token: string }>(`${url}/api/share`, {
        body: {
          files: [
            {
              name: 'fuzz.bin',
              size: 16,
              type: 'application/octet-stream',
              pathname,
              store: 'blob',
              proof: proofs.get(pathname),
            },
          ],
          maxDownloads: 1_000_000,
        },
      }),
      200,
    )
  const kept = await share(uploaded.shift()!)
  const victim = await share(uploaded.shift()!)
  const keptPath = (
    expect(
      'pickup-share POST /api/take',
      await call<{ manifest: { files: Array<{ path: string }> } }>(`${url}/api/take`, {
        body: { code: kept.code },
      }),
      200,
    ) as { manifest: { files: Array<{ path: string }> } }
  ).manifest.files[0]!.path
  const anonymousHints: Hints = {
    pathname: uploaded,
    proof: uploaded.map((p) => proofs.get(p)!),
    code: [kept.code],
    token: [kept.token],
    path: [keptPath],
    authCode: authCodes.map((c) => c.code),
    store: ['blob'],
  }
  return {
    url,
    adminPassword: stack.adminPassword,
    session,
    spareSessions,
    uploadTokens,
    anonymousHints,
    hints: {
      ...anonymousHints,
      password: [stack.adminPassword],
      // The admin's share delete may remove the victim share only: the kept one stays for take and download.
      'deleteShare.code': [victim.code],
      id: authCodes.map((c) => c.id),
      name: ['blob', 'fuzz-extra'],
    },
  }
}

import { quoteIdent } from '@quartet/core/db'
import { silentLogger } from '@quartet/core/testing'
import { JSONRPCClient, JSONRPCErrorException } from 'json-rpc-2.0'
import { buildDnsManager } from '../../src/app.ts'
import { rpcErrorCodes } from '../../src/http/rpc-messages.ts'
import { createDb } from '../../src/store/db.ts'
import {
  addZone,
  buildApp,
  createAccount,
  type TestAccount,
  testConfig,
  unique,
  useDeps,
} from '../helpers.ts'
import { listenOnLoopback } from '../support/programs.ts'

/**
 * `json-rpc-2.0`'s own JSONRPCClient, with the fetch transport exactly as that library's README
 * writes it (plus our credential headers), sees `code`, `message` and `data.error_code` of every
 * row of the README's JSON-RPC error table (issue 43): the transport rejects anything but HTTP
 * 200 with the status text alone, and the client matches answers to calls by id.
 */
const deps = useDeps()

type Served = { port: number; close: () => Promise<void> }

/** The README's client: POST the request, hand a 200's body to client.receive, reject others. */
function readmeClient(port: number, headers: Record<string, string>): JSONRPCClient {
  const client: JSONRPCClient = new JSONRPCClient((jsonRPCRequest) =>
    fetch(`http://127.0.0.1:${port}/rpc`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(jsonRPCRequest),
    }).then((response) => {
      if (response.status === 200) {
        return response.json().then((jsonRPCResponse) => client.receive(jsonRPCResponse))
      } else if (jsonRPCRequest.id !== undefined) {
        return Promise.reject(new Error(response.statusText))
      }
    }),
  )
  return client
}

/** The error a call ends in, as the client reports it (a timeout if no answer matched the call). */
async function refusal(
  client: JSONRPCClient,
  method: string,
  params: Record<string, unknown> = {},
): Promise<JSONRPCErrorException> {
  const outcome = await client
    .timeout(5_000)
    .request(method, params)
    .then(
      (result: unknown) => ({ result }),
      (err: unknown) => err,
    )
  if (!(outcome instanceof JSONRPCErrorException))
    throw new Error(
      `${method}: expected a JSON-RPC error, got ${String((outcome as Error)?.message ?? JSON.stringify(outcome))}`,
    )
  return outcome
}

const dataOf = (e: JSONRPCErrorException) =>
  e.data as { error_code: string; http_status: number; details?: Record<string, unknown> }

describe('json-rpc-2.0’s JSONRPCClient reads every error of the table', () => {
  const servers: Served[] = []
  let main: Served
  let account: TestAccount
  let zone: string
  let subdomainId: number
  const serve = async (app: Parameters<typeof listenOnLoopback>[0]) => {
    const served = await listenOnLoopback(app)
    servers.push(served)
    return served
  }
  beforeAll(async () => {
    main = await serve(buildApp(deps, { env: { MAX_API_KEYS: '2' } }).app)
    account = await createAccount(deps, { quota: 3 })
    zone = `${unique('rpcc')}.test`
    await addZone(deps, zone)
    const made = (await readmeClient(main.port, account.headers).request('subdomains.create', {
      subdomain: 'own',
      rootdomain: zone,
    })) as { subdomain: { id: number } }
    subdomainId = made.subdomain.id
  })
  afterAll(async () => {
    for (const s of servers) await s.close()
  })

  /** Every row is asserted through this, so a missed one shows in the last test. */
  const seen = new Set<string>()
  const expectRow = (e: JSONRPCErrorException, errorCode: string, code: number) => {
    expect([e.code, dataOf(e).error_code]).toEqual([code, errorCode])
    expect(e.message).toEqual(expect.any(String))
    seen.add(errorCode)
  }
  const row = (errorCode: keyof typeof rpcErrorCodes) => rpcErrorCodes[errorCode]!

  it('when credentials, the allow list or the API switch refuse the request, then -32001, -32002, -32003', async () => {
    const wrong = { 'X-API-Key': account.apiKey, 'X-API-Secret': '0'.repeat(64) }
    expectRow(
      await refusal(readmeClient(main.port, wrong), 'quota.get'),
      'auth_invalid_credentials',
      row('auth_invalid_credentials'),
    )
    const fenced = await createAccount(deps, { allowList: ['203.0.113.0/24'] })
    expectRow(
      await refusal(readmeClient(main.port, fenced.headers), 'quota.get'),
      'auth_ip_not_allowed',
      row('auth_ip_not_allowed'),
    )
    const off = await createAccount(deps, { apiAccess: false })
    expectRow(
      await refusal(readmeClient(main.port, off.headers), 'quota.get'),
      'api_access_disabled',
      row('api_access_disabled'),
    )
  })

  it('when what a call names does not exist, then -32004, -32005, -32006', async () => {
    const client = readmeClient(main.port, account.headers)
    expectRow(
      await refusal(client, 'whois.lookup', { domain: 'x.not-offered.invalid' }),
      'not_found',
      row('not_found'),
    )
    expectRow(
      await refusal(client, 'subdomains.get', { id: 999_999_999 }),
      'subdomain_not_found',
      row('subdomain_not_found'),
    )
    expectRow(
      await refusal(client, 'dns_records.get', { subdomain_id: subdomainId, id: 999_999_999 }),
      'dns_record_not_found',
      row('dns_record_not_found'),
    )
  })

  it('when money, renewal windows, quota, names and keys run out, then -32007 to -32010, -32013, -32014', async () => {
    const client = readmeClient(main.port, account.headers)
    const paid = `${unique('paid')}.test`
    await addZone(deps, paid, 500)
    const poor = await refusal(client, 'subdomains.create', { subdomain: 'rich', rootdomain: paid })
    expectRow(poor, 'insufficient_balance', row('insufficient_balance'))
    expect(dataOf(poor).details).toMatchObject({ required: 500 })
    expectRow(
      await refusal(client, 'subdomains.renew', { id: subdomainId }),
      'renewal_not_yet_available',
      row('renewal_not_yet_available'),
    )
    // The same subdomain seen from past its grace period (a clock 1 year + 46 days on).
    const later = new Date(Date.now() + (365 + 46) * 86_400_000)
    const future = await serve(buildApp(deps, { clock: { now: () => later } }).app)
    expectRow(
      await refusal(readmeClient(future.port, account.headers), 'subdomains.renew', { id: subdomainId }),
      'renewal_window_expired',
      row('renewal_window_expired'),
    )
    const full = await createAccount(deps, { quota: 0 })
    expectRow(
      await refusal(readmeClient(main.port, full.headers), 'subdomains.create', {
        subdomain: 'none',
        rootdomain: zone,
      }),
      'quota_exceeded',
      row('quota_exceeded'),
    )
    const other = await createAccount(deps)
    expectRow(
      await refusal(readmeClient(main.port, other.headers), 'subdomains.create', {
        subdomain: 'own',
        rootdomain: zone,
      }),
      'subdomain_taken',
      row('subdomain_taken'),
    )
    await client.request('keys.create', {})
    expectRow(await refusal(client, 'keys.create', {}), 'key_limit_reached', row('key_limit_reached'))
  })

  it('when the rate limit is spent, then -32011 with data.details.reset_at', async () => {
    const limited = await serve(buildApp(deps, { env: { RATE_LIMIT_PER_MINUTE: '1' } }).app)
    const a = await createAccount(deps)
    const client = readmeClient(limited.port, a.headers)
    await client.request('quota.get', {})
    const e = await refusal(client, 'quota.get')
    expectRow(e, 'rate_limit_exceeded', row('rate_limit_exceeded'))
    expect(new Date(dataOf(e).details!.reset_at as string).getTime()).toBeGreaterThan(Date.now() - 1000)
  })

  it('when the upstream refuses, a subdomain is being deleted, or an ACME-only key strays, then -32012, -32015, -32017', async () => {
    // PowerDNS's API on a loopback port nothing listens on: the write fails upstream.
    const unreachable = await serve(
      buildApp(deps, {
        env: { DNS_PROVIDER: 'powerdns', PDNS_API_URL: 'http://127.0.0.1:1', PROVIDER_TIMEOUT_MS: '1000' },
      }).app,
    )
    expectRow(
      await refusal(readmeClient(unreachable.port, account.headers), 'dns_records.create', {
        subdomain_id: subdomainId,
        type: 'TXT',
        content: 'x',
      }),
      'provider_operation_failed',
      row('provider_operation_failed'),
    )

    const client = readmeClient(main.port, account.headers)
    const doomed = (await client.request('subdomains.create', { subdomain: 'doomed', rootdomain: zone })) as {
      subdomain: { id: number }
    }
    // As a delete left it mid-way (the reconcile job would finish or undo it).
    await deps.db.$executeRawUnsafe(
      `UPDATE ${quoteIdent(deps.database.schema)}."subdomain" SET state = 'releasing', state_since = now() WHERE id = $1`,
      doomed.subdomain.id,
    )
    expectRow(
      await refusal(client, 'dns_records.create', {
        subdomain_id: doomed.subdomain.id,
        type: 'TXT',
        content: 'x',
      }),
      'conflict',
      row('conflict'),
    )

    // ACME-only keys do not count among MAX_API_KEYS (spent above).
    const acme = (await client.request('keys.create', { scope: 'acme' })) as {
      key: { api_key: string; api_secret: string }
    }
    const acmeClient = readmeClient(main.port, {
      'X-API-Key': acme.key.api_key,
      'X-API-Secret': acme.key.api_secret,
    })
    expectRow(
      await refusal(acmeClient, 'quota.get'),
      'credential_scope_forbidden',
      row('credential_scope_forbidden'),
    )
  })

  it('when the database is out of reach, then -32016 service_unavailable (HTTP 200, Retry-After kept)', async () => {
    const broken = createDb({
      url: 'postgresql://postgres@127.0.0.1:1/postgres',
      schema: deps.database.schema,
      poolSize: 1,
    })
    try {
      const { app } = buildDnsManager({
        config: testConfig(deps),
        logger: silentLogger(),
        db: broken,
        kv: deps.kv,
      })
      const down = await serve(app)
      expectRow(
        await refusal(readmeClient(down.port, account.headers), 'quota.get'),
        'service_unavailable',
        row('service_unavailable'),
      )
      const raw = await fetch(`http://127.0.0.1:${down.port}/rpc`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...account.headers },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'quota.get' }),
      })
      expect(raw.status).toBe(200)
      expect(Number(raw.headers.get('retry-after'))).toBeGreaterThan(0)
    } finally {
      await broken.$disconnect()
    }
  })

  it('when params are bad, or the service fails unexpectedly, then -32602 bad_request and -32603 internal_error', async () => {
    const client = readmeClient(main.port, account.headers)
    const bad = await refusal(client, 'subdomains.list', { per_page: 9999 })
    expect([bad.code, dataOf(bad).error_code]).toEqual([-32602, 'bad_request'])
    seen.add('bad_request')
    // A database without this service's tables (a wrong DATABASE_SCHEMA): not an outage, a fault.
    const missing = `${deps.database.schema}_missing`
    const db = createDb({ url: deps.database.url, schema: missing, poolSize: 1 })
    try {
      const { app } = buildDnsManager({
        config: testConfig(deps, { DATABASE_SCHEMA: missing }),
        logger: silentLogger(),
        db,
        kv: deps.kv,
      })
      const faulty = await serve(app)
      const e = await refusal(readmeClient(faulty.port, account.headers), 'quota.get')
      expect([e.code, dataOf(e).error_code]).toEqual([-32603, 'internal_error'])
      seen.add('internal_error')
    } finally {
      await db.$disconnect()
    }
  })

  it('then every row of the table was seen', () => {
    expect([...seen].sort()).toEqual([...Object.keys(rpcErrorCodes), 'bad_request', 'internal_error'].sort())
  })
})

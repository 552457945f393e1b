import { request, silentLogger } from '@quartet/core/testing'
import { statusOf } from '@quartet/core/errors'
import { buildDnsManager } from '../../src/app.ts'
import '../../src/domain/errors.ts'
import { rpcErrorCodes } from '../../src/http/rpc-messages.ts'
import { createDb } from '../../src/store/db.ts'
import { testConfig, useDeps } from '../helpers.ts'

const deps = useDeps()

/** The seed's unified error table. */
const seedTable = {
  bad_request: 400,
  auth_invalid_credentials: 401,
  auth_ip_not_allowed: 403,
  api_access_disabled: 403,
  not_found: 404,
  subdomain_not_found: 404,
  dns_record_not_found: 404,
  insufficient_balance: 402,
  renewal_not_yet_available: 422,
  renewal_window_expired: 403,
  quota_exceeded: 429,
  rate_limit_exceeded: 429,
  provider_operation_failed: 502,
  internal_error: 500,
} as const

describe('the unified error table', () => {
  it('when each seed code is looked up, then it maps to the seed status', () => {
    for (const [code, status] of Object.entries(seedTable))
      expect([code, statusOf(code as keyof typeof seedTable)]).toEqual([code, status])
  })

  it('when domain codes go out over JSON-RPC, then each has its own fixed code in -32000..-32099', () => {
    const codes = Object.values(rpcErrorCodes)
    expect(new Set(codes).size).toBe(codes.length)
    for (const c of codes) expect(c! <= -32000 && c! >= -32099).toBe(true)
  })

  it('when the database is unreachable, then 503 service_unavailable with Retry-After, without internals', async () => {
    const config = testConfig(deps)
    const broken = createDb({
      url: 'postgresql://postgres@127.0.0.1:1/postgres',
      schema: deps.database.schema,
      poolSize: 1,
    })
    try {
      const { app } = buildDnsManager({ config, logger: silentLogger(), db: broken, kv: deps.kv })
      const res = await request(app)
        .post('/rest/auth/verify')
        .set({ 'X-API-Key': 'dnsm_x', 'X-API-Secret': 'y' })
        .expect(503)
      expect(res.headers['retry-after']).toBe('5')
      expect(res.body).toEqual({
        success: false,
        error: { code: 'service_unavailable', message: 'service unavailable' },
        request_id: expect.any(String),
      })
    } finally {
      await broken.$disconnect()
    }
  })
})

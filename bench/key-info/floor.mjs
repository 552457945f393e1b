// A second reference for the key-info benchmark, run when REDIS_URL is set: the floor of any
// design that sends one Redis command per request to check a shared per-key rate limit. A bare
// node:http server that hashes the bearer key, sends for each request alone a fixed-window Lua
// script with the same reads as key-info's hot route (through ioredis, no group commit, no
// auto-pipelining) and answers a fixed body of the key record's size with the same headers.
// No database, no cache, no envelope, no metrics, no logging. Started by run.mjs with FLOOR_PORT
// and REDIS_URL.
import { createHash, randomUUID } from 'node:crypto'
import { createServer } from 'node:http'
import { createRequire } from 'node:module'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const here = path.dirname(fileURLToPath(import.meta.url))
const { Redis } = createRequire(path.join(here, '../../packages/core/package.json'))('ioredis')

const redis = new Redis(process.env.REDIS_URL, { keyPrefix: `key-info-bench-floor-${process.pid}:` })
// One hit of the script of packages/core/src/kv.ts (HIT_WINDOWS), for one request at a time.
redis.defineCommand('hitWindow', {
  lua: `
redis.call('SET', KEYS[1], 0, 'PX', ARGV[2], 'NX')
local count = redis.call('INCRBY', KEYS[1], ARGV[1])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  ttl = tonumber(ARGV[2])
end
local out = {count, ttl}
for i = 2, #KEYS do out[i + 1] = redis.call('GET', KEYS[i]) end
return out`,
})

const usd = 12.345678
const body = JSON.stringify({
  data: {
    label: 'sk-qk-v1-AbC...xYz9',
    limit: 100,
    limit_remaining: usd,
    limit_reset: 'monthly',
    include_byok_in_limit: false,
    ...Object.fromEntries(
      ['usage', 'byok_usage'].flatMap((f) => ['', '_daily', '_weekly', '_monthly'].map((w) => [f + w, usd])),
    ),
    is_free_tier: false,
    is_management_key: false,
    is_provisioning_key: false,
    free_model_daily_requests: { limit: 1000, used: 334, remaining: 666 },
    rate_limit: { interval: '1m', requests: 600, note: 'This field is deprecated and safe to ignore.' },
    allowed_data_regions: ['global', 'europe', 'us'],
    creator_user_id: 'cli',
    organization_id: null,
    workspace_id: randomUUID(),
    expires_at: null,
  },
})
// helmet's defaults, as key-info sends them.
const securityHeaders = [
  [
    'Content-Security-Policy',
    "default-src 'self';base-uri 'self';font-src 'self' https: data:;form-action 'self';frame-ancestors 'self';img-src 'self' data:;object-src 'none';script-src 'self';script-src-attr 'none';style-src 'self' https: 'unsafe-inline';upgrade-insecure-requests",
  ],
  ['Cross-Origin-Opener-Policy', 'same-origin'],
  ['Cross-Origin-Resource-Policy', 'same-origin'],
  ['Origin-Agent-Cluster', '?1'],
  ['Referrer-Policy', 'no-referrer'],
  ['Strict-Transport-Security', 'max-age=31536000; includeSubDomains'],
  ['X-Content-Type-Options', 'nosniff'],
  ['X-DNS-Prefetch-Control', 'off'],
  ['X-Download-Options', 'noopen'],
  ['X-Frame-Options', 'SAMEORIGIN'],
  ['X-Permitted-Cross-Domain-Policies', 'none'],
  ['X-XSS-Protection', '0'],
]

/** The keys whose counters this run made (the bench uses one), removed at the end. */
const counted = new Set()

const server = createServer(async (req, res) => {
  res.setHeader('X-Request-Id', randomUUID())
  for (const [name, value] of securityHeaders) res.setHeader(name, value)
  res.setHeader('Cache-Control', 'no-store')
  const auth = req.headers.authorization ?? ''
  const hash = createHash('sha256')
    .update(auth.startsWith('Bearer ') ? auth.slice(7) : '')
    .digest('hex')
  if (counted.size < 100) counted.add(hash)
  try {
    const [count, ttlMs] = await redis.hitWindow(
      3,
      `rl:${hash}`,
      `key-version:${hash}`,
      `free-model:${hash}`,
      1,
      60_000,
    )
    res.setHeader('RateLimit-Limit', '1000000')
    res.setHeader('RateLimit-Remaining', String(Math.max(0, 1_000_000 - count)))
    res.setHeader('RateLimit-Reset', String(Math.ceil(ttlMs / 1000)))
    res.setHeader('Content-Type', 'application/json; charset=utf-8')
    res.setHeader('Content-Length', Buffer.byteLength(body))
    res.end(body)
  } catch {
    res.statusCode = 500
    res.end('{"error":{"code":500,"message":"Internal Server Error"}}')
  }
})
server.listen(Number(process.env.FLOOR_PORT), '127.0.0.1', () => process.send?.('ready'))
process.on('SIGTERM', () =>
  server.close(async () => {
    for (const hash of counted) await redis.del(`rl:${hash}`)
    await redis.quit()
    process.exit(0)
  }),
)

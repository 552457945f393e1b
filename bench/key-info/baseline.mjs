// The baseline of the key-info benchmark: a bare node:http server doing what GET /api/v1/key
// cannot do less than: read the bearer key, hash it, one indexed pg SELECT of that key, JSON out.
// Started by run.mjs with BASELINE_PORT, DATABASE_URL and BENCH_SCHEMA.
import { createHash } from 'node:crypto'
import { createServer } from 'node:http'
import { createRequire } from 'node:module'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const here = path.dirname(fileURLToPath(import.meta.url))
const pg = createRequire(path.join(here, '../../apps/key-info/package.json'))('pg')

const schema = process.env.BENCH_SCHEMA
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 })
const sql = `SELECT hash, name, label, disabled, limit_micros::text, usage_micros::text, expires_at
             FROM "${schema}".api_key WHERE hash = $1`

const server = createServer(async (req, res) => {
  const auth = req.headers.authorization ?? ''
  const token = auth.startsWith('Bearer ') ? auth.slice(7) : ''
  if (!token) {
    res
      .writeHead(401, { 'content-type': 'application/json' })
      .end('{"error":{"code":401,"message":"Missing Authentication header"}}')
    return
  }
  const hash = createHash('sha256').update(token).digest('hex')
  try {
    const { rows } = await pool.query(sql, [hash])
    if (!rows[0]) {
      res
        .writeHead(401, { 'content-type': 'application/json' })
        .end('{"error":{"code":401,"message":"Invalid API key"}}')
      return
    }
    res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' })
    res.end(JSON.stringify({ data: rows[0] }))
  } catch {
    res
      .writeHead(500, { 'content-type': 'application/json' })
      .end('{"error":{"code":500,"message":"Internal Server Error"}}')
  }
})
server.listen(Number(process.env.BASELINE_PORT), '127.0.0.1', () => process.send?.('ready'))
process.on('SIGTERM', () => server.close(() => pool.end().then(() => process.exit(0))))

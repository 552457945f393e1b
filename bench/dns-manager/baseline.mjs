#!/usr/bin/env node
// The baseline for bench/dns-manager/run.mjs: a bare node:http server answering GET /quota with
// the same pg lookups dns-manager does for GET /rest/quota (credential + account by public key,
// SHA-256 of the secret compared in constant time, the subdomain count), no framework, no
// rate limiter, no logging. Started by run.mjs with DATABASE_URL, DATABASE_SCHEMA and PORT.
import { createHash, timingSafeEqual } from 'node:crypto'
import { createServer } from 'node:http'
import { createRequire } from 'node:module'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const here = path.dirname(fileURLToPath(import.meta.url))
const pg = createRequire(path.join(here, '../../packages/core/package.json'))('pg')
const schema = process.env.DATABASE_SCHEMA
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 })
const q = (name) => `"${schema}"."${name}"`
const sha = (s) => createHash('sha256').update(s).digest()

const send = (res, status, body) => {
  const text = JSON.stringify(body)
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) })
  res.end(text)
}

createServer(async (req, res) => {
  try {
    if (req.method !== 'GET' || req.url !== '/quota') return send(res, 404, { success: false })
    const key = req.headers['x-api-key']
    const secret = req.headers['x-api-secret']
    if (!key || !secret) return send(res, 401, { success: false })
    const found = await pool.query(
      `SELECT c.secret_hash, a.id, a.quota_total, a.balance_cents, a.api_access_enabled
         FROM ${q('api_credential')} c JOIN ${q('account')} a ON a.id = c.account_id WHERE c.public_key = $1`,
      [key],
    )
    const row = found.rows[0]
    if (!row || !timingSafeEqual(sha(secret), Buffer.from(row.secret_hash, 'hex')))
      return send(res, 401, { success: false })
    if (!row.api_access_enabled) return send(res, 403, { success: false })
    const used = Number(
      (await pool.query(`SELECT count(*) FROM ${q('subdomain')} WHERE account_id = $1`, [row.id])).rows[0]
        .count,
    )
    send(res, 200, {
      success: true,
      quota: { used, total: row.quota_total, available: Math.max(0, row.quota_total - used) },
      balance_cents: row.balance_cents,
    })
  } catch {
    send(res, 500, { success: false })
  }
}).listen(Number(process.env.PORT), '127.0.0.1', () => process.send?.('ready'))

#!/usr/bin/env node
// The baseline for bench/dns-manager/run.mjs: a bare node:http server answering each measured
// read with the same pg lookups dns-manager makes for it on a cold cache — the credential and
// its account by public key (one join), the SHA-256 of the secret compared in constant time,
// the API switch, then the read's own queries — with no framework, no rate limiter, no logging,
// no cache. Started by run.mjs with DATABASE_URL, DATABASE_SCHEMA and PORT.
//
//   GET  /quota                         quota (subdomain count) and balance
//   POST /auth/verify                   the same lookups, the verify answer
//   GET  /subdomains                    a page of 50 subdomains (with their zone's name)
//   GET  /subdomains/:id/records        the subdomain (ownership), its records
//   POST /rpc                           a JSON-RPC call or batch of quota.get, subdomains.list
//                                       and dns_records.list: one credential lookup per request
//   POST /graphql                       { quota, subdomains }: the two reads (no GraphQL parsing)
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
const readBody = (req) =>
  new Promise((resolve, reject) => {
    const chunks = []
    req.on('data', (c) => chunks.push(c))
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')))
    req.on('error', reject)
  })

async function principal(req) {
  const key = req.headers['x-api-key']
  const secret = req.headers['x-api-secret']
  if (!key || !secret) return null
  const found = await pool.query(
    `SELECT c.secret_hash, a.id, a.quota_total, a.balance_cents, a.api_access_enabled
       FROM ${q('api_credential')} c JOIN ${q('account')} a ON a.id = c.account_id WHERE c.public_key = $1`,
    [key],
  )
  const row = found.rows[0]
  if (!row || !timingSafeEqual(sha(secret), Buffer.from(row.secret_hash, 'hex'))) return null
  if (!row.api_access_enabled) return null
  return { ...row, key }
}

async function quota(p) {
  const used = Number(
    (await pool.query(`SELECT count(*) FROM ${q('subdomain')} WHERE account_id = $1`, [p.id])).rows[0].count,
  )
  return { used, total: p.quota_total, available: Math.max(0, p.quota_total - used) }
}

async function subdomains(p) {
  const rows = (
    await pool.query(
      `SELECT s.*, z.name AS rootdomain FROM ${q('subdomain')} s JOIN ${q('root_zone')} z ON z.id = s.root_zone_id
        WHERE s.account_id = $1 AND s.id > 0 ORDER BY s.id LIMIT 51`,
      [p.id],
    )
  ).rows
  return {
    subdomains: rows.slice(0, 50).map((s) => ({
      id: s.id,
      subdomain: s.label,
      rootdomain: s.rootdomain,
      full_domain: s.full_domain,
      status: s.suspended ? 'suspended' : 'active',
      created_at: s.created_at.toISOString(),
      updated_at: s.updated_at.toISOString(),
      expires_at: s.expires_at?.toISOString() ?? null,
      never_expires: s.never_expires,
    })),
    next_cursor: null,
  }
}

async function records(p, id) {
  const own = await pool.query(`SELECT id FROM ${q('subdomain')} WHERE id = $1 AND account_id = $2`, [
    id,
    p.id,
  ])
  if (!own.rows[0]) return null
  const rows = (
    await pool.query(`SELECT * FROM ${q('dns_record')} WHERE subdomain_id = $1 AND id > 0 ORDER BY id`, [id])
  ).rows
  return {
    dns_records: rows.slice(0, 50).map((r) => ({
      id: r.id,
      name: r.name,
      type: r.type,
      content: r.content,
      ttl: r.ttl,
      priority: r.priority,
      created_at: r.created_at.toISOString(),
      updated_at: r.updated_at.toISOString(),
    })),
    next_cursor: null,
  }
}

async function rpcCall(p, call) {
  switch (call.method) {
    case 'quota.get':
      return { quota: await quota(p), balance_cents: p.balance_cents }
    case 'subdomains.list':
      return subdomains(p)
    case 'dns_records.list':
      return records(p, Number(call.params.subdomain_id))
    default:
      return null
  }
}

createServer(async (req, res) => {
  try {
    const url = req.url ?? ''
    const body = req.method === 'POST' ? await readBody(req) : ''
    const p = await principal(req)
    if (!p) return send(res, 401, { success: false })
    if (req.method === 'GET' && url === '/quota')
      return send(res, 200, { success: true, quota: await quota(p), balance_cents: p.balance_cents })
    if (req.method === 'POST' && url === '/auth/verify')
      return send(res, 200, { success: true, account: { api_key: p.key, quota: await quota(p) } })
    if (req.method === 'GET' && url === '/subdomains')
      return send(res, 200, { success: true, ...(await subdomains(p)) })
    const m = /^\/subdomains\/(\d+)\/records$/.exec(url)
    if (req.method === 'GET' && m) {
      const page = await records(p, Number(m[1]))
      return page ? send(res, 200, { success: true, ...page }) : send(res, 404, { success: false })
    }
    if (req.method === 'POST' && url === '/rpc') {
      const parsed = JSON.parse(body)
      if (!Array.isArray(parsed))
        return send(res, 200, { jsonrpc: '2.0', id: parsed.id, result: await rpcCall(p, parsed) })
      const out = []
      for (const call of parsed) out.push({ jsonrpc: '2.0', id: call.id, result: await rpcCall(p, call) })
      return send(res, 200, out)
    }
    if (req.method === 'POST' && url === '/graphql') {
      JSON.parse(body)
      const [qt, subs] = [await quota(p), await subdomains(p)]
      return send(res, 200, {
        data: { quota: { quota: qt, balance_cents: p.balance_cents }, subdomains: subs },
      })
    }
    send(res, 404, { success: false })
  } catch {
    send(res, 500, { success: false })
  }
}).listen(Number(process.env.PORT), '127.0.0.1', () => process.send?.('ready'))

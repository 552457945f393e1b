import { randomBytes } from 'node:crypto'
import { Pool } from 'undici'
import { type RequestSpec, type Sample, send } from '../load.ts'
import type { FaultStack } from '../stack.ts'
import { burst, call, json, type Kit, readinessProbe, uniqueId, type WriteBurst } from './common.ts'

const MAX_DOWNLOADS = 100_000
const FILE_BYTES = 2048

interface Share {
  code: string
  path: string
  size: number
  /** Downloads the client received in full; those whose outcome it cannot know (cut, no answer). */
  delivered: number
  unknown: number
  /** Receivers whose download had no answer or a 5xx: they come back (their transfer may be paid). */
  retrying: string[]
}

/** A download request's context: its share and the receiver (address) asking. */
interface Asked {
  share: Share
  receiver: string
  retry: boolean
}

/**
 * pickup-share with the local blob store: shares of one small file each, made the way a
 * browser makes them (upload permission, PUT of the bytes, share), each allowing many
 * downloads. Tracked: which share codes were acknowledged, and per share how many downloads
 * were delivered, so that `remaining` can be held against them.
 */
export async function pickupShareKit(stack: FaultStack): Promise<Kit> {
  const service = stack.services['pickup-share']
  const admin = { cookie: '' }
  const adminHeaders = () => ({
    cookie: admin.cookie,
    origin: service.url,
    'x-requested-with': 'faults',
    'content-type': 'application/json',
  })
  const login = async () => {
    const res = await call(`${service.url}/api/admin/login`, {
      headers: adminHeaders(),
      body: { password: stack.adminPassword },
    })
    const cookie = res.headers.get('set-cookie')?.split(';')[0]
    if (res.status !== 200 || !cookie) throw new Error(`pickup-share: admin login failed: ${res.status}`)
    admin.cookie = cookie
  }
  await login()
  const settings = await call(`${service.url}/api/admin/settings`, {
    method: 'PUT',
    headers: adminHeaders(),
    body: { maxDownloadsCap: 1_000_000, loginAttemptsPerIp: 1000 },
  })
  if (settings.status !== 200) throw new Error(`pickup-share: settings: ${JSON.stringify(settings.body)}`)

  const shares: Share[] = []
  const sentShares = new Set<string>()
  const ackedShares: Share[] = []

  /** Upload permission, the bytes, the share: a browser's three requests. */
  async function createShare(pool: Pick<Pool, 'request'>): Promise<Sample> {
    const name = `${uniqueId('f')}.bin`
    const bytes = randomBytes(FILE_BYTES)
    const permission = await send(pool, 'pickup-share', 'POST /api/upload', {
      method: 'POST',
      path: '/api/upload',
      headers: { 'content-type': 'application/json' },
      body: json({ store: 'blob', name, size: bytes.length, type: 'application/octet-stream' }),
    })
    const issued = permission.body as {
      pathname?: string
      proof?: string
      upload?: { headers?: Record<string, string> }
    }
    if (permission.status !== 200 || !issued?.pathname) return permission
    const put = await send(pool, 'pickup-share', 'PUT /api/blob/upload', {
      method: 'PUT',
      path: '/api/blob/upload',
      headers: issued.upload?.headers ?? {},
      body: bytes,
    })
    if (put.status !== 201) return put
    sentShares.add(issued.pathname)
    const share = await send(pool, 'pickup-share', 'POST /api/share', {
      method: 'POST',
      path: '/api/share',
      headers: { 'content-type': 'application/json' },
      body: json({
        files: [
          {
            name,
            size: bytes.length,
            type: 'application/octet-stream',
            pathname: issued.pathname,
            store: 'blob',
            proof: issued.proof,
          },
        ],
        maxDownloads: MAX_DOWNLOADS,
      }),
      context: issued.pathname,
    })
    const code = (share.body as { code?: string })?.code
    if (share.status === 200 && code)
      ackedShares.push({
        code,
        path: issued.pathname,
        size: bytes.length,
        delivered: 0,
        unknown: 0,
        retrying: [],
      })
    return share
  }

  const seedPool = new Pool(service.url)
  try {
    for (let i = 0; i < 4; i++) {
      const sample = await createShare(seedPool)
      if (sample.status !== 200)
        throw new Error(`pickup-share: creating a share failed: ${JSON.stringify(sample.body)}`)
      shares.push(ackedShares.pop()!)
    }
  } finally {
    await seedPool.close()
  }

  let turn = 0
  const nextShare = () => shares[turn++ % shares.length]!
  let receivers = 0
  const download = (): RequestSpec => {
    const share = nextShare()
    // Each download is another receiver (address; the service trusts loopback's X-Forwarded-For):
    // one receiver's downloads of a file within the resume window are one download (issue 42),
    // so only distinct receivers make delivered copies and spent downloads the same count. A
    // receiver whose download failed comes back, as a person does: a download whose payment
    // committed while its answer was lost is then delivered by joining its paid transfer.
    const retried = share.retrying.shift()
    const n = ++receivers
    const receiver = retried ?? `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`
    const context: Asked = { share, receiver, retry: retried !== undefined }
    return {
      method: 'GET',
      path: `/api/download?code=${share.code}&path=${encodeURIComponent(share.path)}`,
      headers: { 'x-forwarded-for': receiver },
      countBody: true,
      context,
    }
  }
  /** A download counts as delivered only in full; cut or unanswered, nobody knows. */
  const countDownload = (s: Sample): boolean => {
    const { share, receiver, retry } = s.context as Asked
    // A failed download counts as unknown until its receiver came back.
    if (retry) share.unknown--
    if ((s.status !== null && s.status >= 500) || (s.errorCode && s.status !== 200)) {
      share.unknown++
      share.retrying.push(receiver)
      return false
    }
    if (s.status === 200 && s.bytes === share.size && !s.errorCode) {
      share.delivered++
      return true
    }
    if (s.errorCode || s.status === 200) share.unknown++
    return false
  }
  const relogin = { pending: false }
  const noteSession = (s: Sample) => {
    // A Redis that lost its data lost the sessions too: log in again, as a person would.
    if (s.status === 401 && !relogin.pending) {
      relogin.pending = true
      void login()
        .catch(() => {})
        .finally(() => setTimeout(() => (relogin.pending = false), 1000))
    }
  }

  return {
    name: 'pickup-share',
    service,
    probes: [
      {
        name: 'POST /api/take',
        everyMs: 250,
        next: () => ({
          method: 'POST',
          path: '/api/take',
          headers: { 'content-type': 'application/json' },
          body: json({ code: nextShare().code }),
        }),
        ok: (s) => s.status === 200 && (s.body as { manifest?: unknown })?.manifest !== undefined,
        needs: { postgres: 'required', redis: 'none' },
        envelope: 'plain',
      },
      {
        name: 'GET /api/download',
        everyMs: 250,
        next: download,
        ok: (s) => s.status === 200 && s.bytes === (s.context as Asked).share.size,
        needs: { postgres: 'required', redis: 'none' },
        envelope: 'plain',
        onSample: (s) => void countDownload(s),
      },
      {
        name: 'POST /api/upload',
        everyMs: 500,
        next: () => ({
          method: 'POST',
          path: '/api/upload',
          headers: { 'content-type': 'application/json' },
          body: json({ store: 'blob', name: `${uniqueId('p')}.txt`, size: 10, type: 'text/plain' }),
        }),
        ok: (s) => s.status === 200 && typeof (s.body as { pathname?: unknown })?.pathname === 'string',
        needs: { postgres: 'required', redis: 'optional' },
        envelope: 'plain',
      },
      {
        name: 'GET /api/admin/shares',
        everyMs: 500,
        next: () => ({ method: 'GET', path: '/api/admin/shares?pageSize=5', headers: adminHeaders() }),
        // A session lost with Redis's data is a 401 (the probe logs in again), not a failure.
        ok: (s) =>
          (s.status === 200 && Array.isArray((s.body as { items?: unknown })?.items)) ||
          (s.status === 401 && (s.body as { error?: { code?: string } })?.error?.code === 'session_required'),
        // Sessions live in Redis: without it the admin area may answer 503.
        needs: { postgres: 'required', redis: 'optional' },
        envelope: 'plain',
        onSample: noteSession,
      },
      readinessProbe({ postgres: 'required', redis: 'optional' }),
    ],
    writeBurst(pool: Pool): WriteBurst {
      let running = true
      let acked = 0
      const shareLoops = Array.from({ length: 2 }, async () => {
        while (running) {
          const sample = await createShare(pool)
          if (sample.status === 200) acked++
          if (sample.errorCode) await new Promise((r) => setTimeout(r, 50))
        }
      })
      const downloads = burst(pool, 'pickup-share', 'GET /api/download (burst)', 3, download, countDownload)
      return {
        async stop() {
          running = false
          await Promise.all([...shareLoops, downloads.stop()])
        },
        acknowledged: () => acked + downloads.acknowledged(),
      }
    },

    async invariants() {
      const problems: string[] = []
      for (const share of [...shares, ...ackedShares]) {
        const [row] = await stack.postgres.query<{ remaining: number | null }>(
          'SELECT remaining FROM pickup_share.share WHERE code = $1',
          [share.code],
        )
        if (!row) {
          problems.push(`acknowledged share ${share.code} is not stored`)
          continue
        }
        const most = MAX_DOWNLOADS - share.delivered
        const least = most - share.unknown
        if (row.remaining === null || row.remaining > most || row.remaining < least)
          problems.push(
            `share ${share.code}: remaining ${row.remaining}, but ${share.delivered} downloads were delivered ` +
              `(and ${share.unknown} have an unknown outcome) of ${MAX_DOWNLOADS}: expected ${least === most ? most : `${least}…${most}`}`,
          )
      }
      // Every transfer's bytes add up (issue 42): budget = room + drawn by running or dead
      // responses + written, nothing below zero, never more written than the budget.
      const [bad] = await stack.postgres.query<{ n: string }>(
        `SELECT count(*) AS n FROM pickup_share.download_transfer
         WHERE room < 0 OR reserved < 0 OR written > budget OR room + reserved + written <> budget`,
      )
      if (Number(bad?.n ?? 0) > 0) problems.push(`${bad!.n} download transfers do not add up to their budget`)
      // Every acknowledged share can be picked up: the code works and its file is whole.
      for (const share of ackedShares) {
        const take = await call<{ manifest?: { files?: Array<{ path: string }> } }>(
          `${service.url}/api/take`,
          {
            body: { code: share.code },
          },
        )
        if (take.status !== 200 || take.body.manifest?.files?.[0]?.path !== share.path) {
          problems.push(
            `acknowledged share ${share.code}: take answered ${take.status} ${JSON.stringify(take.body).slice(0, 120)}`,
          )
          continue
        }
        const res = await fetch(
          `${service.url}/api/download?code=${share.code}&path=${encodeURIComponent(share.path)}`,
          { signal: AbortSignal.timeout(10_000) },
        )
        const bytes = (await res.arrayBuffer()).byteLength
        if (res.status !== 200 || bytes !== share.size)
          problems.push(
            `acknowledged share ${share.code}: download answered ${res.status} with ${bytes} bytes`,
          )
      }
      return problems
    },
  }
}

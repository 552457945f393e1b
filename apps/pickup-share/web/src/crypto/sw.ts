import { decryptStream } from './decrypt-stream.ts'
import type { Job, JobFile } from './job-types.ts'
import { zipStream } from './zip.ts'

/**
 * The service worker of encrypted downloads (README "End-to-end encrypted shares"), as Firefox
 * Send did it: the pickup page hands it a job (the files' download URLs, their names and the
 * key) and then navigates a frame to `/assets/e2e-dl/<job>`; this worker answers that navigation
 * with the ciphertext fetched from /api/download, decrypted as it streams. The browser's download
 * manager writes it to disk, so no whole file is ever in memory. A dropped connection is resumed
 * with Range/If-Range from the byte it stopped at (a resume the server counts as the same
 * download). Several files: one ZIP, built here as they stream.
 */
/** What this file uses of a service worker's global scope (the DOM library has no types for it). */
interface WorkerScope {
  skipWaiting(): Promise<void>
  clients: { claim(): Promise<void> }
  addEventListener(
    type: 'install' | 'activate',
    fn: (e: Event & { waitUntil(p: Promise<unknown>): void }) => void,
  ): void
  addEventListener(type: 'message', fn: (e: MessageEvent) => void): void
  addEventListener(
    type: 'fetch',
    fn: (e: Event & { request: Request; respondWith(r: Response | Promise<Response>): void }) => void,
  ): void
}
const scope = self as unknown as WorkerScope

const jobs = new Map<string, Job & { port?: MessagePort }>()

scope.addEventListener('install', () => void scope.skipWaiting())
scope.addEventListener('activate', (e) => e.waitUntil(scope.clients.claim()))

scope.addEventListener('message', (e) => {
  const data = e.data as { type?: string; job?: Job }
  const port = e.ports[0]
  if (data.type === 'job' && data.job) {
    jobs.set(data.job.id, { ...data.job, ...(port ? { port } : {}) })
    port?.postMessage({ type: 'ready' })
  }
  // 'ping': a message keeps this worker alive while a long download streams.
})

scope.addEventListener('fetch', (e) => {
  const url = new URL(e.request.url)
  const m = /\/e2e-dl\/([A-Za-z0-9_-]+)$/.exec(url.pathname)
  if (!m) return
  const job = jobs.get(m[1]!)
  if (!job) {
    e.respondWith(
      new Response('This download has ended; start it again from the pickup page.', { status: 410 }),
    )
    return
  }
  jobs.delete(job.id)
  e.respondWith(answer(job))
})

async function answer(job: Job & { port?: MessagePort }): Promise<Response> {
  const done = (ok: boolean, error?: string) => job.port?.postMessage({ type: 'done', ok, error })
  let body: ReadableStream<Uint8Array>
  if (job.zip) {
    body = zipStream(
      job.files.map((f) => ({ name: f.name, size: f.size, open: () => plaintext(f, job.key) })),
    )
  } else {
    try {
      body = await plaintext(job.files[0]!, job.key)
    } catch (err) {
      done(false, String(err))
      return new Response('The encrypted file could not be fetched.', { status: 502 })
    }
  }
  // The page hears how it ended: all written, or broken off (a failed tag, a lost file).
  const reader = body.getReader()
  const watched = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { value, done: end } = await reader.read()
        if (end) {
          controller.close()
          done(true)
        } else controller.enqueue(value)
      } catch (err) {
        done(false, String(err))
        controller.error(err)
      }
    },
    cancel(reason) {
      done(false, 'cancelled')
      return reader.cancel(reason)
    },
  })
  const name = job.zip ?? job.files[0]!.name
  return new Response(watched, {
    headers: {
      'Content-Type': job.inline ? job.files[0]!.type : 'application/octet-stream',
      'Content-Disposition': `${job.inline ? 'inline' : 'attachment'}; filename*=UTF-8''${encodeURIComponent(name)}`,
      'Content-Length': String(job.size),
      'X-Content-Type-Options': 'nosniff',
      'Cache-Control': 'no-store',
      ...(job.inline
        ? {
            // /api/preview's policy, plus inline style: the browser's own image and media
            // documents style themselves so; the sandbox still lets nothing run.
            'Content-Security-Policy':
              "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'self'; form-action 'none'; base-uri 'none'; sandbox",
          }
        : {}),
    },
  })
}

/**
 * The first answer for a file. A server that is busy for a moment (503 with Retry-After: its
 * requests for this download are still starting, or its database pool is full; nothing was
 * spent) or a connection that failed is asked again, as a resume is below: a browser's own
 * download would just fail, and the receiver would have to click again.
 */
async function firstAnswer(url: string): Promise<Response> {
  for (let attempt = 1; ; attempt++) {
    const res = await fetch(url, { credentials: 'same-origin', cache: 'no-store' }).catch((err: unknown) => {
      if (attempt >= FIRST_TRIES) throw err
      return null
    })
    if (res && (res.status !== 503 || attempt >= FIRST_TRIES)) return res
    const after = Number(res?.headers.get('retry-after'))
    await res?.body?.cancel()
    await new Promise((r) => setTimeout(r, 1000 * (after > 0 && after <= 5 ? after : attempt)))
  }
}
const FIRST_TRIES = 4

/** One file's plaintext: its ciphertext fetched (and resumed where it broke off), decrypted. */
async function plaintext(f: JobFile, key: Uint8Array<ArrayBuffer>): Promise<ReadableStream<Uint8Array>> {
  const first = await firstAnswer(f.url)
  if (!first.ok || !first.body) throw new Error(`HTTP ${first.status}`)
  const etag = first.headers.get('etag')
  let reader = first.body.getReader()
  let received = 0
  let retries = 0
  const ciphertext = new ReadableStream<Uint8Array>({
    async pull(controller) {
      for (;;) {
        try {
          const { value, done } = await reader.read()
          if (done) {
            if (received < f.cipherSize) throw new Error('short body')
            controller.close()
            return
          }
          received += value.length
          retries = 0
          controller.enqueue(value)
          return
        } catch (err) {
          // Broken off: ask again for the rest, as the same download (If-Range: the same bytes).
          if (++retries > 5) throw err
          await new Promise((r) => setTimeout(r, 500 * retries))
          const res = await fetch(f.url, {
            credentials: 'same-origin',
            cache: 'no-store',
            headers: { Range: `bytes=${received}-`, ...(etag ? { 'If-Range': etag } : {}) },
          }).catch(() => null)
          if (res?.status === 206 && res.body) reader = res.body.getReader()
          else if (!res || res.status >= 500) continue
          else throw err
        }
      }
    },
    cancel: (reason) => reader.cancel(reason),
  })
  return ciphertext.pipeThrough(decryptStream(key))
}

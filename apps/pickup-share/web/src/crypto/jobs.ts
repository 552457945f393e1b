import swUrl from './sw.ts?worker&url'
import type { Job } from './job-types.ts'

/**
 * The pickup page's side of encrypted downloads: registers the service worker (sw.ts) for
 * `/assets/` — the folder its built script lives in — and hands it jobs. A job is the key and
 * the files' download URLs; the worker answers `/assets/e2e-dl/<id>` with their plaintext.
 */

let registration: Promise<ServiceWorker> | null = null

/** The active worker (registered once per page). Rejects where service workers are missing. */
export function worker(): Promise<ServiceWorker> {
  registration ??= (async () => {
    if (!('serviceWorker' in navigator)) throw new Error('no service workers')
    const reg = await navigator.serviceWorker.register(swUrl, { scope: '/assets/' })
    const sw = reg.active ?? reg.waiting ?? reg.installing
    if (!sw) throw new Error('no service worker')
    if (sw.state === 'activated') return sw
    await new Promise<void>((resolve, reject) => {
      sw.addEventListener('statechange', () => {
        if (sw.state === 'activated') resolve()
        if (sw.state === 'redundant') reject(new Error('service worker failed'))
      })
    })
    return sw
  })()
  registration.catch(() => (registration = null))
  return registration
}

/** How long the worker may take to accept a job (it answers at once unless the browser is stuck). */
const READY_MS = 15_000

const newId = () =>
  Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, '0')).join('')

/**
 * Hands a job to the worker and returns its address; `ended` resolves when the worker has
 * streamed it all (false with a reason when it failed). Until then the page pings the worker
 * every 10 s, which keeps it alive however long the download takes.
 */
export async function startJob(
  job: Omit<Job, 'id'>,
): Promise<{ url: string; ended: Promise<{ ok: boolean; error?: string }> }> {
  const sw = await worker()
  const id = newId()
  const channel = new MessageChannel()
  const ready = new Promise<void>((resolve) => {
    channel.port1.onmessage = (e: MessageEvent<{ type: string }>) => {
      if (e.data.type === 'ready') resolve()
    }
  })
  sw.postMessage({ type: 'job', job: { ...job, id } }, [channel.port2])
  // A worker that never takes the job must not leave the page's download buttons waiting for
  // good: past READY_MS the download fails with a reason, and the receiver can click again.
  let timer: ReturnType<typeof setTimeout> | undefined
  await Promise.race([
    ready,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('the download worker did not answer')), READY_MS)
    }),
  ]).finally(() => clearTimeout(timer))
  const ended = new Promise<{ ok: boolean; error?: string }>((resolve) => {
    const ping = setInterval(() => sw.postMessage({ type: 'ping' }), 10_000)
    channel.port1.onmessage = (e: MessageEvent<{ type: string; ok: boolean; error?: string }>) => {
      if (e.data.type !== 'done') return
      clearInterval(ping)
      resolve({ ok: e.data.ok, ...(e.data.error ? { error: e.data.error } : {}) })
    }
  })
  return { url: `/assets/e2e-dl/${id}`, ended }
}

/** Saves a job's answer: a hidden frame navigates to it (the worker's attachment is a download). */
export function saveJob(url: string, ended: Promise<unknown>): void {
  const frame = document.createElement('iframe')
  frame.hidden = true
  frame.src = url
  document.body.append(frame)
  void ended.then(() => frame.remove())
}

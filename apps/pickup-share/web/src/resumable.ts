import { defaultOptions, type PreviousUpload, Upload } from 'tus-js-client'
import { ApiFailure, type StoreKind, type UploadGrant } from './api.ts'

/**
 * Resumable uploads with tus-js-client (issue 16 item 2). Each upload's URL is kept in
 * localStorage under a fingerprint of the file (name, type, size, last change) and the store, so
 * picking the same file again after a reload, a crash or a closed laptop resumes it where the
 * server says it stopped; a dropped connection is retried and resumed by tus-js-client itself.
 * The URL and the pathname travel in the upload's metadata, so a resumed upload can be shared
 * without asking for a new permission. The permission's proof (which /api/share asks for) is kept
 * beside it in this browser's localStorage only: it is never sent in the tus metadata.
 */

export interface Resumed {
  previous: PreviousUpload
  pathname: string
  /** The proof of the upload's permission, for /api/share. */
  proof: string
}

const proofKey = (pathname: string) => `pickup-share:proof:${pathname}`

function keptProof(pathname: string): string | null {
  try {
    return localStorage.getItem(proofKey(pathname))
  } catch {
    return null
  }
}

function keepProof(pathname: string, proof: string | null): void {
  try {
    if (proof === null) localStorage.removeItem(proofKey(pathname))
    else localStorage.setItem(proofKey(pathname), proof)
  } catch {
    // No storage (private mode): the upload cannot be resumed after a reload, nothing else.
  }
}

/** An encrypted upload of a file is another upload than its plain one: its own fingerprint. */
const fingerprintOf = (file: File, store: StoreKind, encrypted = false) =>
  [
    'pickup-share',
    store,
    file.name,
    file.type,
    file.size,
    file.lastModified,
    ...(encrypted ? ['e2e'] : []),
  ].join(':')

/**
 * An upload of this file to this store that a previous visit began (and did not finish): a plain
 * one, an encrypted one (crypto/send.ts finds its key and salt), or either (the "resumes" note).
 */
export async function findResumable(
  file: File,
  store: StoreKind,
  kind: 'plain' | 'encrypted' | 'any' = 'plain',
): Promise<Resumed | null> {
  if (kind === 'any') return (await findResumable(file, store)) ?? findResumable(file, store, 'encrypted')
  const probe = new Upload(file, {
    fingerprint: async () => fingerprintOf(file, store, kind === 'encrypted'),
  })
  const found = await probe.findPreviousUploads().catch(() => [])
  // The newest one: older entries are uploads that were replaced.
  const previous = found.sort((a, b) => Date.parse(b.creationTime) - Date.parse(a.creationTime))[0]
  const pathname = previous?.metadata.pathname
  if (!previous || !pathname || !previous.uploadUrl) return null
  // Without its proof the upload could not be shared: start again with a new permission.
  const proof = keptProof(pathname)
  if (proof === null) return null
  return { previous, pathname, proof }
}

/** Forgets a stored upload (it could not be resumed: expired, or removed by the server). */
export async function forgetResumable(r: Resumed): Promise<void> {
  keepProof(r.pathname, null)
  await defaultOptions.urlStorage?.removeUpload(r.previous.urlStorageKey).catch(() => {})
}

export interface ResumableOptions {
  file: File
  store: StoreKind
  /** A new permission's tus endpoint and token, or an upload to resume. */
  start: { grant: UploadGrant & { tus: NonNullable<UploadGrant['tus']> } } | { resume: Resumed }
  onProgress: (sent: number, total: number) => void
  /** Aborting it cancels the upload: the server removes what arrived and frees its room. */
  signal: AbortSignal
  /**
   * An end-to-end encrypted upload: the file's aes128gcm body instead of the file, under a name
   * that says nothing. Resumed as any upload (the source makes the same bytes again from the
   * same key and salt, which crypto/send.ts keeps beside the proof until the upload is done).
   */
  encrypted?: {
    source: {
      size: number
      slice(start: number, end: number): Promise<{ value: Blob; done: boolean }>
      close(): void
    }
    name: string
  }
}

/** The ciphertext is made per PATCH: 8 MiB at a time (the S3 store's part size). */
const ENCRYPTED_CHUNK = 8 * 1024 * 1024

/** Sends the file with tus; resolves with its pathname once the server has every byte. */
export function sendResumable(o: ResumableOptions): Promise<string> {
  const { file, store } = o
  const pathname = 'grant' in o.start ? o.start.grant.pathname : o.start.resume.pathname
  const endpoint =
    'grant' in o.start ? o.start.grant.tus.endpoint : (o.start.resume.previous.metadata.endpoint ?? '')
  if ('grant' in o.start) keepProof(pathname, o.start.grant.proof)
  return new Promise((resolve, reject) => {
    const upload = new Upload(file, {
      endpoint,
      headers: 'grant' in o.start ? o.start.grant.tus.headers : {},
      ...(o.encrypted
        ? { fileReader: { openFile: async () => o.encrypted!.source }, chunkSize: ENCRYPTED_CHUNK }
        : {}),
      metadata: {
        filename: o.encrypted ? o.encrypted.name : file.name,
        filetype: o.encrypted ? 'application/octet-stream' : file.type || 'application/octet-stream',
        pathname,
        store,
        endpoint,
      },
      fingerprint: async () => fingerprintOf(file, store, !!o.encrypted),
      storeFingerprintForResuming: true,
      removeFingerprintOnSuccess: true,
      // A dropped connection: retried, each time from the offset the server has.
      retryDelays: [0, 1000, 3000, 5000, 10_000, 20_000, 30_000],
      onProgress: (sent, total) => o.onProgress(sent, total),
      onSuccess: () => {
        // Not resumed again (its fingerprint goes too); the page holds the proof until it shares.
        keepProof(pathname, null)
        resolve(pathname)
      },
      onError: (err) => {
        const status =
          (err as { originalResponse?: { getStatus(): number } | null }).originalResponse?.getStatus() ?? 0
        let code = status ? String(status) : 'network'
        let message = err.message
        try {
          const body = JSON.parse(
            (err as { originalResponse?: { getBody(): string } | null }).originalResponse?.getBody() ?? '',
          ) as { error?: { code?: string; message?: string } }
          if (body.error?.code) code = body.error.code
          if (body.error?.message) message = body.error.message
        } catch {
          // tus answers in plain text
        }
        reject(new ApiFailure(status, code, message))
      },
    })
    // Cancelled before it could start (Cancel all while this file waited for its permission).
    if (o.signal.aborted) return reject(new ApiFailure(0, 'aborted', 'cancelled'))
    o.signal.addEventListener('abort', () => {
      // true: terminate on the server too (tus termination), which gives the reservation back.
      void upload.abort(true).catch(() => {})
      reject(new ApiFailure(0, 'aborted', 'cancelled'))
    })
    if ('resume' in o.start) upload.resumeFromPreviousUpload(o.start.resume.previous)
    upload.start()
  })
}

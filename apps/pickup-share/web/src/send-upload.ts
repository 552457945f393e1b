import { ApiFailure, requestUpload, type StoreKind, uploadWithProgress } from './api.ts'

/**
 * One file of the send page on its way to the server: resumed where a previous visit left it,
 * or with a new permission, through tus where the store has it. An end-to-end encrypted file goes
 * the same way as its aes128gcm body (crypto/send.ts), under a name that says nothing.
 */

/** tus-js-client (resumable uploads) is loaded when a file is chosen (README "Web pages"). */
export const resumable = () => import('./resumable.ts')

/** A file as /api/share lists it. */
export interface Uploaded {
  name: string
  size: number
  type: string
  pathname: string
  store: StoreKind
  proof: string
}

/** The encrypted body of a file: what is uploaded instead of it. */
export interface SealedFile {
  source: {
    size: number
    slice(start: number, end: number): Promise<{ value: Blob; done: boolean }>
    close(): void
    blob(): Promise<Blob>
  }
  /** The name the server gets: a placeholder (the real one is sealed in the share's names). */
  name: string
  /** Its key and salt are those of an unfinished upload of the file: it may go on. */
  resumes: boolean
  /** Keeps (or forgets) what resuming the upload at this pathname needs. */
  keep: (pathname: string, begun: boolean) => void
}

export async function uploadOne(o: {
  file: File
  store: StoreKind
  extra: { limitSize?: boolean; authCode?: string }
  onProgress: (sent: number, total: number) => void
  signal: AbortSignal
  sealed?: SealedFile | undefined
}): Promise<Uploaded> {
  const { file, store, onProgress, sealed } = o
  const type = sealed ? 'application/octet-stream' : file.type || 'application/octet-stream'
  const name = sealed ? sealed.name : file.name
  const size = sealed ? sealed.source.size : file.size
  // Progress in the file's own bytes, whatever travels.
  const progress = sealed
    ? (sent: number, total: number) =>
        onProgress(Math.round((sent * file.size) / Math.max(1, total)), file.size)
    : onProgress
  let pathname: string | null = null
  let proof = ''
  let sentTo = store
  const { findResumable, forgetResumable, sendResumable } = await resumable()
  // An encrypted upload goes on only with the key and salt it began with (crypto/send.ts).
  const resumed = sealed
    ? sealed.resumes
      ? await findResumable(file, store, 'encrypted')
      : null
    : await findResumable(file, store)
  if (resumed) {
    try {
      pathname = await sendResumable({
        file,
        store,
        start: { resume: resumed },
        onProgress: progress,
        signal: o.signal,
        ...(sealed ? { encrypted: { source: sealed.source, name } } : {}),
      })
      proof = resumed.proof
    } catch (err) {
      if (err instanceof ApiFailure && err.code === 'aborted') throw err
      // Expired or gone: start again with a new permission.
      await forgetResumable(resumed)
      sealed?.keep(resumed.pathname, false)
    }
  }
  if (pathname === null) {
    const grant = await requestUpload({ store, name, size, type, ...o.extra })
    sentTo = grant.store
    proof = grant.proof
    if (grant.tus) {
      sealed?.keep(grant.pathname, true)
      pathname = await sendResumable({
        file,
        store,
        start: { grant: { ...grant, tus: grant.tus } },
        onProgress: progress,
        signal: o.signal,
        ...(sealed ? { encrypted: { source: sealed.source, name } } : {}),
      })
    } else {
      // No tus (a git repository): one PUT of the whole body.
      const body = sealed ? new File([await sealed.source.blob()], name, { type }) : file
      await uploadWithProgress(grant, body, progress, o.signal)
      pathname = grant.pathname
    }
  }
  sealed?.keep(pathname, false)
  return { name, size, type, pathname, store: sentTo, proof }
}

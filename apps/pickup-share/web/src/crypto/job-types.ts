/** What the pickup page hands the service worker of encrypted downloads (jobs.ts → sw.ts). */

export interface JobFile {
  /** /api/download URL of the ciphertext (with the share's code or token, and its grant). */
  url: string
  name: string
  type: string
  /** The plaintext's size. */
  size: number
  /** The ciphertext's size (what the server counts and sends). */
  cipherSize: number
}

export interface Job {
  id: string
  key: Uint8Array<ArrayBuffer>
  files: JobFile[]
  /** Several files: the archive's name (they come as one ZIP). */
  zip?: string
  /** Shown in a frame (a preview) instead of saved. */
  inline?: boolean
  /** The answer's length: the plaintext, or the whole archive. */
  size: number
}

/** The pickup-share API as the pages use it. Errors come back as ApiFailure with the envelope's code. */
import { ApiFailure, codeEnvelope, failureOf } from '@quartet/web-pages/api-failure'
import type { Encryption } from './crypto/keys.ts'

export { ApiFailure }

export type StoreKind = 'blob' | 'bucket' | 'repo'

export interface SiteInfo {
  stores: StoreKind[]
  defaultExpireDays: number
  maxExpireDays: number
  defaultMaxDownloads: number
  maxDownloadsCap: number
  maxFileSizeBytes: number
  codeLength: number
  unlimitedEnabled: boolean
  previewEnabled: boolean
  previewMaxBytes: number
  /** The most UTF-8 bytes of text the send page takes. */
  textMaxBytes: number
}

export interface UploadGrant {
  store: StoreKind
  pathname: string
  upload: {
    url: string
    method: 'PUT' | 'POST'
    fields?: Record<string, string>
    headers?: Record<string, string>
  }
  options: { maximumSizeInBytes: number | null }
  /** blob and bucket: the same permission as a resumable tus upload. */
  tus?: { endpoint: string; headers: Record<string, string> }
  /** The uploader's proof: /api/share takes the file only with it. */
  proof: string
}

export interface Manifest {
  code: string
  files: Array<{ name: string; size: number; type: string; path: string }>
  createdAt: string
  expiresAt: string
}

export async function request<T>(method: string, path: string, body?: unknown, admin = false): Promise<T> {
  const headers: Record<string, string> = {}
  if (body !== undefined) headers['content-type'] = 'application/json'
  // The admin API refuses state-changing requests without it (a cross-site form cannot send it).
  if (admin) headers['x-requested-with'] = 'pickup-share'
  let res: Response
  try {
    res = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: 'same-origin',
    })
  } catch {
    throw new ApiFailure(0, 'network', 'network error')
  }
  if (!res.ok) throw await failureOf(res, codeEnvelope)
  return (await res.json()) as T
}

export const siteInfo = () => request<SiteInfo>('GET', '/api/site')

export const requestUpload = (input: {
  store: StoreKind
  name: string
  size: number
  type: string
  limitSize?: boolean
  authCode?: string
}) => request<UploadGrant>('POST', '/api/upload', input)

export const createShare = (input: {
  files: Array<{
    name: string
    size: number
    type: string
    pathname: string
    store: StoreKind
    proof: string
  }>
  expireDays: number
  maxDownloads: number | null
  limitSize?: boolean
  authCode?: string
  /** Protects the share: the receiver needs it too (README "Password-protected shares"). */
  password?: string
  /** Encrypted in this browser (README "End-to-end encrypted shares"): never the key. */
  encryption?: Encryption
}) => request<{ code: string; token: string; link: string }>('POST', '/api/share', input)

/** The bounds the server puts on a share's password (POST /api/share). */
export const PASSWORD_MIN = 4
export const PASSWORD_MAX = 128

/** Whether an authorization code grants what the share will ask, before any byte is uploaded. */
export const checkAuthCode = (input: { authCode: string; unlimitedDownloads: boolean; limitSize: boolean }) =>
  request<{ ok: true; scope: string; expiresAt: string }>('POST', '/api/auth-code/check', input)

/**
 * How a share is opened: the typed code (guessing limits apply) or the pickup link's token, and
 * for a protected share the access grant its take returned (download URLs carry it as `access`;
 * the password itself never goes in a URL).
 */
export type Access = ({ code: string } | { token: string }) & { access?: string }

/** The token of a pickup link (`/pickup#<token>`); the fragment never reaches a server. */
export const LINK_TOKEN = /^[A-Za-z0-9_-]{22,64}$/

export const pickupLink = (token: string) => `${location.origin}/pickup#${token}`

export interface TakeAnswer {
  manifest: Manifest
  remaining: number | null
  /** Only for a protected share: the grant its downloads carry. */
  access?: { grant: string; expiresAt: string }
  /** Only for an end-to-end encrypted share: how to decrypt it (the key is never here). */
  encryption?: Encryption
}

/** take by code or token; a protected share's password goes in the JSON body, never the URL. */
export const take = (access: Access, password?: string) =>
  request<TakeAnswer>('POST', '/api/take', {
    ...('code' in access ? { code: access.code } : { token: access.token }),
    ...(password === undefined ? {} : { password }),
  })

export const downloadUrl = (access: Access, path: string) =>
  `/api/download?${new URLSearchParams({ ...access, path }).toString()}`

/** A file shown inline (README "Previews"): counted as this receiver's download of it. */
export const previewUrl = (access: Access, path: string) =>
  `/api/preview?${new URLSearchParams({ ...access, path }).toString()}`

/**
 * Sends the file exactly as the permission says (a PUT with headers, or a POST policy form with
 * the file last) through XMLHttpRequest, whose upload progress events are the real bytes sent.
 */
export function uploadWithProgress(
  grant: UploadGrant,
  file: File,
  onProgress: (sent: number, total: number) => void,
  signal?: AbortSignal,
): Promise<void> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest()
    xhr.open(grant.upload.method, grant.upload.url)
    xhr.upload.addEventListener('progress', (e) =>
      onProgress(e.loaded, e.lengthComputable ? e.total : file.size),
    )
    xhr.addEventListener('load', () => {
      if (xhr.status >= 200 && xhr.status < 300) {
        onProgress(file.size, file.size)
        resolve()
        return
      }
      let code = String(xhr.status)
      let message = xhr.statusText || `HTTP ${xhr.status}`
      try {
        const body = JSON.parse(xhr.responseText) as { error?: { code?: string; message?: string } }
        if (body.error?.code) code = body.error.code
        if (body.error?.message) message = body.error.message
      } catch {
        // S3 answers in XML; the status says enough
      }
      reject(new ApiFailure(xhr.status, code, message))
    })
    xhr.addEventListener('error', () => reject(new ApiFailure(0, 'network', 'network error')))
    xhr.addEventListener('abort', () => reject(new ApiFailure(0, 'aborted', 'aborted')))
    // Cancelled before it could start: nothing is sent.
    if (signal?.aborted) return reject(new ApiFailure(0, 'aborted', 'aborted'))
    signal?.addEventListener('abort', () => xhr.abort())
    if (grant.upload.method === 'PUT') {
      for (const [name, value] of Object.entries(grant.upload.headers ?? {}))
        xhr.setRequestHeader(name, value)
      xhr.send(file)
    } else {
      const form = new FormData()
      for (const [name, value] of Object.entries(grant.upload.fields ?? {})) form.append(name, value)
      form.append('file', file, file.name)
      xhr.send(form)
    }
  })
}

// --- admin ----------------------------------------------------------------------------------------

export type Settings = {
  defaultExpireDays: number
  maxExpireDays: number
  defaultMaxDownloads: number
  maxDownloadsCap: number
  maxFileSizeBytes: number
  codeLength: number
  unlimitedEnabled: boolean
  takeFailuresPerIp: number
  takeFailuresGlobal: number
  takeFailureWindowSeconds: number
  guessThrottlePerMinute: number
  passwordFailuresPerIp: number
  passwordFailuresPerShare: number
  passwordFailureWindowSeconds: number
  loginAttemptsPerIp: number
  loginWindowSeconds: number
  loginFailuresPerAccount: number
  loginFailuresGlobal: number
  loginBackoffMaxSeconds: number
  previewEnabled: boolean
  previewMaxBytes: number
}

export interface AdminShare {
  code: string
  createdAt: string
  expiresAt: string
  exhaustedAt: string | null
  maxDownloads: number | null
  remaining: number | null
  limitSize: boolean
  /** A password protects it (the admin never sees the password). */
  protected: boolean
  /** Encrypted end to end in the sender's browser (its file names are placeholders). */
  encrypted?: boolean
  totalBytes: number
  files: Array<{ name: string; size: number; type: string; path: string; store: string }>
}

export interface AuthCodeRecord {
  id: string
  hint: string
  note: string | null
  scope: 'downloads' | 'size' | 'both'
  status: 'unused' | 'used' | 'expired' | 'revoked'
  createdAt: string
  expiresAt: string
  usedAt: string | null
  usedByShare: string | null
  revokedAt: string | null
}

export interface AuditEntry {
  at: string
  actor: string
  action: string
  target: string | null
  ip: string | null
  details?: Record<string, unknown>
}

/** One storage instance as GET /api/admin/stores reports it (fields read leniently). */
export interface StoreInstance {
  id: string
  name: string
  kind: string
  enabled: boolean
  quotaBytes: number | null
  usedBytes: number
  reservedBytes: number
  /** Connection settings without credentials. */
  settings: Record<string, unknown>
  /** Names of the credentials that are set (never their values). */
  credentialsSet: string[]
  builtin: boolean
  /** false when the server could not build a client from the settings. */
  available: boolean
}

/** What POST /api/admin/stores/test found. */
export interface ConnectionTest {
  ok: boolean
  step?: 'settings' | 'connect' | 'write' | 'read' | 'delete'
  message?: string
  reason?: 'unreachable' | 'timeout' | 'no_bucket' | 'credentials' | 'auth' | 'no_repo' | 'other'
  note?: string
  noteCode?: 'branch_missing'
  ms: number
}

export interface StoreInput {
  name: string
  kind?: StoreKind
  settings?: Record<string, unknown>
  quotaBytes?: number | null
  enabled?: boolean
}

export const admin = {
  login: (password: string) => request<{ ok: true }>('POST', '/api/admin/login', { password }, true),
  logout: () => request<{ ok: true }>('POST', '/api/admin/logout', undefined, true),
  shares: (query: Record<string, string>) =>
    request<{ items: AdminShare[]; page: number; pageSize: number; total: number }>(
      'GET',
      `/api/admin/shares?${new URLSearchParams(query).toString()}`,
    ),
  deleteShare: (code: string) => request('DELETE', '/api/admin/shares', { code }, true),
  cleanup: () =>
    request<{ removedFiles: number; freedBytes: number; partialFiles: number; partialBytes: number }>(
      'POST',
      '/api/admin/shares',
      { action: 'cleanup' },
      true,
    ),
  settings: () => request<Settings>('GET', '/api/admin/settings'),
  saveSettings: (patch: Partial<Settings>) => request<Settings>('PUT', '/api/admin/settings', patch, true),
  authCodes: () => request<{ items: AuthCodeRecord[] }>('GET', '/api/admin/authcodes'),
  createAuthCode: (input: { scope: string; expiresInHours: number; note?: string }) =>
    request<AuthCodeRecord & { code: string }>('POST', '/api/admin/authcodes', input, true),
  revokeAuthCode: (id: string) => request<AuthCodeRecord>('DELETE', '/api/admin/authcodes', { id }, true),
  audit: () => request<{ items: AuditEntry[] }>('GET', '/api/admin/audit?limit=100'),
  stores: async (): Promise<StoreInstance[]> => {
    const body = await request<unknown>('GET', '/api/admin/stores')
    const list = Array.isArray(body)
      ? body
      : ((body as { items?: unknown[]; stores?: unknown[] }).items ??
        (body as { stores?: unknown[] }).stores ??
        [])
    return list.map((raw) => {
      const s = raw as Record<string, unknown>
      const num = (...keys: string[]) => {
        for (const k of keys) if (typeof s[k] === 'number') return s[k] as number
        return null
      }
      return {
        id: String(s.id ?? s.instance ?? s.name ?? ''),
        name: String(s.name ?? s.id ?? s.instance ?? ''),
        kind: String(s.kind ?? ''),
        enabled: s.enabled !== false,
        quotaBytes: num('quotaBytes', 'quota'),
        usedBytes: num('usedBytes', 'used') ?? 0,
        reservedBytes: num('reservedBytes', 'reserved') ?? 0,
        settings: (s.settings && typeof s.settings === 'object' ? s.settings : {}) as Record<string, unknown>,
        credentialsSet: Array.isArray(s.credentialsSet) ? s.credentialsSet.map(String) : [],
        builtin: s.builtin === true,
        available: s.available !== false,
      }
    })
  },
  saveStore: (input: StoreInput) => request<unknown>('POST', '/api/admin/stores', input, true),
  deleteStore: (name: string) =>
    request<{ deleted: true; deletedShares: number }>('DELETE', '/api/admin/stores', { name }, true),
  testStore: (input: { name?: string; kind?: StoreKind; settings?: Record<string, unknown> }) =>
    request<ConnectionTest>('POST', '/api/admin/stores/test', input, true),
}

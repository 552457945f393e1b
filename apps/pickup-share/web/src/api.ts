/**
 * The pickup-share API as the pages use it. Errors come back as ApiFailure with the envelope's code.
 * Request and answer types come from the operation definitions (src/http): type-only imports, so
 * nothing of the server lands in the bundle.
 */
import type { InputOf, OutputOf } from '@quartet/core/operation'
import { ApiFailure, codeEnvelope, failureOf } from '@quartet/web-pages/api-failure'
import type * as adminOps from '../../src/http/admin.ts'
import type { createShareOperation, checkAuthCodeOperation, takeOperation } from '../../src/http/share.ts'
import type * as storeOps from '../../src/http/stores.ts'
import type { requestUploadOperation } from '../../src/http/upload.ts'
import type { siteInfoOperation } from '../../src/http/web.ts'

export { ApiFailure }

/** What GET /api/site answers. */
export type SiteInfo = OutputOf<typeof siteInfoOperation>

export type StoreKind = SiteInfo['stores'][number]

/** What POST /api/upload answers: where and how to upload one file. */
export type UploadGrant = OutputOf<typeof requestUploadOperation>

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

export const requestUpload = (input: InputOf<typeof requestUploadOperation>['body']) =>
  request<UploadGrant>('POST', '/api/upload', input)

/** A share of uploaded files; a password protects it, `encryption` says it was encrypted here (never the key). */
export const createShare = (input: InputOf<typeof createShareOperation>['body']) =>
  request<OutputOf<typeof createShareOperation>>('POST', '/api/share', input)

/** The bounds the server puts on a share's password (POST /api/share). */
export const PASSWORD_MIN = 4
export const PASSWORD_MAX = 128

/** Whether an authorization code grants what the share will ask, before any byte is uploaded. */
export const checkAuthCode = (input: InputOf<typeof checkAuthCodeOperation>['body']) =>
  request<OutputOf<typeof checkAuthCodeOperation>>('POST', '/api/auth-code/check', input)

/**
 * How a share is opened: the typed code (guessing limits apply) or the pickup link's token, and
 * for a protected share the access grant its take returned (download URLs carry it as `access`;
 * the password itself never goes in a URL).
 */
export type Access = ({ code: string } | { token: string }) & { access?: string }

/** The token of a pickup link (`/pickup#<token>`); the fragment never reaches a server. */
export const LINK_TOKEN = /^[A-Za-z0-9_-]{22,64}$/

export const pickupLink = (token: string) => `${location.origin}/pickup#${token}`

/**
 * What take answers: the manifest and remaining downloads, for a protected share the grant its
 * downloads carry, for an end-to-end encrypted one how to decrypt it (the key is never here).
 */
export type TakeAnswer = OutputOf<typeof takeOperation>

export type Manifest = TakeAnswer['manifest']

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

export type Settings = OutputOf<typeof adminOps.getSettingsOperation>

/** One share as the admin's list shows it (whether a password protects it, never the password). */
export type AdminShare = OutputOf<typeof adminOps.listSharesOperation>['items'][number]

export type AuthCodeRecord = OutputOf<typeof adminOps.listAuthCodesOperation>['items'][number]

export type AuditEntry = OutputOf<typeof adminOps.auditLogOperation>['items'][number]

type StoreView = OutputOf<typeof storeOps.listStoresOperation>['items'][number]

/** One storage instance as GET /api/admin/stores reports it (fields read leniently, below). */
export type StoreInstance = Pick<
  StoreView,
  | 'id'
  | 'name'
  | 'enabled'
  | 'quotaBytes'
  | 'usedBytes'
  | 'reservedBytes'
  | 'settings'
  | 'credentialsSet'
  | 'builtin'
  | 'available'
> & { kind: string }

/** What POST /api/admin/stores/test found. */
export type ConnectionTest = OutputOf<typeof storeOps.testStoreOperation>

export type StoreInput = InputOf<typeof storeOps.upsertStoreOperation>['body']

export const admin = {
  login: (password: string) =>
    request<OutputOf<typeof adminOps.adminLoginOperation>>('POST', '/api/admin/login', { password }, true),
  logout: () =>
    request<OutputOf<typeof adminOps.adminLogoutOperation>>('POST', '/api/admin/logout', undefined, true),
  shares: (query: Record<string, string>) =>
    request<OutputOf<typeof adminOps.listSharesOperation>>(
      'GET',
      `/api/admin/shares?${new URLSearchParams(query).toString()}`,
    ),
  deleteShare: (code: string) =>
    request<OutputOf<typeof adminOps.deleteShareOperation>>('DELETE', '/api/admin/shares', { code }, true),
  cleanup: () =>
    request<OutputOf<typeof adminOps.cleanupOrphansOperation>>(
      'POST',
      '/api/admin/shares',
      { action: 'cleanup' },
      true,
    ),
  settings: () => request<Settings>('GET', '/api/admin/settings'),
  saveSettings: (patch: InputOf<typeof adminOps.putSettingsOperation>['body']) =>
    request<Settings>('PUT', '/api/admin/settings', patch, true),
  authCodes: () => request<OutputOf<typeof adminOps.listAuthCodesOperation>>('GET', '/api/admin/authcodes'),
  // The page's select holds the scope as a string; the operation's schema checks it.
  createAuthCode: (
    input: Omit<InputOf<typeof adminOps.createAuthCodeOperation>['body'], 'scope'> & { scope: string },
  ) =>
    request<OutputOf<typeof adminOps.createAuthCodeOperation>>('POST', '/api/admin/authcodes', input, true),
  revokeAuthCode: (id: string) =>
    request<OutputOf<typeof adminOps.revokeAuthCodeOperation>>(
      'DELETE',
      '/api/admin/authcodes',
      { id },
      true,
    ),
  audit: () => request<OutputOf<typeof adminOps.auditLogOperation>>('GET', '/api/admin/audit?limit=100'),
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
  saveStore: (input: StoreInput) =>
    request<OutputOf<typeof storeOps.upsertStoreOperation>>('POST', '/api/admin/stores', input, true),
  deleteStore: (name: string) =>
    request<OutputOf<typeof storeOps.deleteStoreOperation>>('DELETE', '/api/admin/stores', { name }, true),
  testStore: (input: InputOf<typeof storeOps.testStoreOperation>['body']) =>
    request<ConnectionTest>('POST', '/api/admin/stores/test', input, true),
}

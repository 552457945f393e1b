import type { ConnectionTest, StoreInstance, StoreKind } from '../api.ts'
import { type Key, t } from '../i18n.ts'

// The storage instances' connection settings (kinds, fields, defaults) and the words of a
// connection test's outcome, shared by the list (stores.tsx) and the add/edit form (store-form.tsx).

export const KINDS: StoreKind[] = ['blob', 'bucket', 'repo']
export const NAME = /^[a-z0-9][a-z0-9._-]{0,62}$/
export const HTTP_URL = /^https?:\/\/[^\s/]+/

export type Message = { kind: 'ok' | 'error'; text: string }

/** A connection test's outcome as a sentence in the page's language (the server's words only for the unforeseen). */
export function describeTest(r: ConnectionTest): Message {
  if (r.ok) {
    const note = r.noteCode ? t(`stores.note.${r.noteCode}` as Key) : r.note
    return {
      kind: 'ok',
      text: note ? t('stores.testOkNote', { ms: r.ms, note }) : t('stores.testOk', { ms: r.ms }),
    }
  }
  const reason = r.reason && r.reason !== 'other' ? t(`stores.reason.${r.reason}` as Key) : (r.message ?? '')
  return {
    kind: 'error',
    text: t('stores.testFailed', { step: t(`stores.step.${r.step ?? 'connect'}` as Key), message: reason }),
  }
}

/** Whether the form's connection settings differ from the stored ones (a typed secret always does). */
export function settingsChanged(next: Record<string, unknown>, store: StoreInstance): boolean {
  // A setting left out means its default: the same as the form's default value.
  const withDefault = (k: string, v: unknown) =>
    v !== undefined ? v : k in DEFAULTS ? DEFAULTS[k] : k === 'pathStyle' || k === 'postPolicy' ? true : v
  const keys = new Set([...Object.keys(next), ...Object.keys(store.settings)])
  for (const k of keys) {
    if (SECRETS.includes(k)) {
      if (next[k] !== undefined) return true
    } else if (LISTS.includes(k)) {
      if (JSON.stringify(next[k] ?? []) !== JSON.stringify(store.settings[k] ?? [])) return true
    } else if (withDefault(k, next[k]) !== withDefault(k, store.settings[k])) return true
  }
  return false
}
export const SECRETS = ['token', 'accessKey', 'secretKey']
/** Settings that are lists, entered as comma-separated text. */
export const LISTS = ['mirrors']

/** Text fields of the connection settings, per kind (the checkboxes are handled apart). */
export const TEXT_FIELDS: Record<StoreKind, Array<{ key: string; label: Key; hint?: Key; secret?: true }>> = {
  blob: [],
  bucket: [
    { key: 'endpoint', label: 'stores.endpoint', hint: 'stores.endpointHint' },
    { key: 'bucket', label: 'stores.bucket' },
    { key: 'region', label: 'stores.region' },
    { key: 'accessKey', label: 'stores.accessKey', secret: true },
    { key: 'secretKey', label: 'stores.secretKey', secret: true },
  ],
  repo: [
    { key: 'remoteUrl', label: 'stores.remoteUrl', hint: 'stores.remoteUrlHint' },
    { key: 'branch', label: 'stores.branch' },
    { key: 'username', label: 'stores.username', hint: 'stores.usernameHint' },
    { key: 'token', label: 'stores.token', secret: true },
    { key: 'owner', label: 'stores.owner' },
    { key: 'repo', label: 'stores.repo', hint: 'stores.mirrorsHint' },
    { key: 'mirrors', label: 'stores.mirrors', hint: 'stores.mirrorsListHint' },
  ],
}
export const DEFAULTS: Record<string, string> = {
  region: 'us-east-1',
  branch: 'main',
  username: 'x-access-token',
}

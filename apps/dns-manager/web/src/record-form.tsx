import { useEffect, useRef, useState } from 'preact/hooks'
import { type ArgsOf, type DnsRecord, op } from './api.ts'
import { t } from './i18n.ts'
import { Alert, describeFailure, fieldOf } from './ui.tsx'

export const RECORD_TYPES = ['A', 'AAAA', 'CNAME', 'MX', 'TXT', 'NS', 'SRV', 'CAA'] as const
type RecordType = (typeof RECORD_TYPES)[number]
type FieldName = 'name' | 'content' | 'ttl' | 'priority' | 'weight' | 'port' | 'flag' | 'tag'

/** The fields each type's form shows, in order (the same fields the API takes). */
const FORM: Record<RecordType, FieldName[]> = {
  A: ['name', 'content', 'ttl'],
  AAAA: ['name', 'content', 'ttl'],
  CNAME: ['name', 'content', 'ttl'],
  MX: ['name', 'priority', 'content', 'ttl'],
  TXT: ['name', 'content', 'ttl'],
  NS: ['name', 'content', 'ttl'],
  SRV: ['name', 'priority', 'weight', 'port', 'content', 'ttl'],
  CAA: ['name', 'flag', 'tag', 'content', 'ttl'],
}
const NUMERIC: FieldName[] = ['ttl', 'priority', 'weight', 'port', 'flag']

type Draft = { type: RecordType } & Record<FieldName, string>
const emptyDraft = (type: RecordType = 'A'): Draft => ({
  type,
  name: '@',
  content: '',
  ttl: '',
  priority: '',
  weight: '',
  port: '',
  flag: '',
  tag: '',
})
const draftOf = (r: DnsRecord): Draft => ({
  type: r.type as RecordType,
  name: r.name,
  content: r.content,
  ttl: String(r.ttl),
  priority: r.priority === null ? '' : String(r.priority),
  weight: r.weight === null ? '' : String(r.weight),
  port: r.port === null ? '' : String(r.port),
  flag: r.flag === null ? '' : String(r.flag),
  tag: r.tag ?? '',
})

/** The draft as the API's input: the type's fields only; numbers as typed (the API says what is wrong). */
/** The record's arguments as dns_records.create takes them (the server checks each field). */
function inputOf(d: Draft): Omit<ArgsOf<'dns_records.create'>, 'subdomain_id'> {
  // Every type's form has content, sent as typed (even empty: the server names the error).
  const input: Record<string, unknown> = { type: d.type, content: d.content }
  for (const f of FORM[d.type]) {
    const v = d[f].trim()
    if (f === 'content' || v === '') continue
    input[f] = NUMERIC.includes(f) && /^-?\d+$/.test(v) ? Number(v) : v
  }
  return input as Omit<ArgsOf<'dns_records.create'>, 'subdomain_id'>
}

/** The form that adds a record to a subdomain or changes one (SubdomainPage). */
export function RecordForm({
  subdomainId,
  editing,
  onDone,
  onCancel,
}: {
  subdomainId: number
  editing: DnsRecord | null
  onDone: (message: string) => void
  onCancel: () => void
}) {
  const [draft, setDraft] = useState<Draft>(editing ? draftOf(editing) : emptyDraft())
  const [error, setError] = useState<unknown>(null)
  const [busy, setBusy] = useState(false)
  const first = useRef<HTMLSelectElement>(null)
  useEffect(() => first.current?.focus(), [])
  const set = (f: keyof Draft, v: string) => setDraft((d) => ({ ...d, [f]: v }))
  const submit = async (e: Event) => {
    e.preventDefault()
    setBusy(true)
    setError(null)
    try {
      if (editing)
        await op('dns_records.update', { subdomain_id: subdomainId, id: editing.id, ...inputOf(draft) })
      else await op('dns_records.create', { subdomain_id: subdomainId, ...inputOf(draft) })
      onDone(editing ? t('records.updated') : t('records.added'))
    } catch (err) {
      setError(err)
    } finally {
      setBusy(false)
    }
  }
  const errorField = fieldOf(error)
  const shown = FORM[draft.type]
  return (
    <form
      class="card record-form"
      onSubmit={submit}
      aria-labelledby="record-form-title"
      data-testid="record-form"
    >
      <h3 id="record-form-title">{editing ? t('records.edit') : t('records.add')}</h3>
      <div class="field">
        <label for="record-type">{t('records.type')}</label>
        <select
          id="record-type"
          ref={first}
          value={draft.type}
          disabled={Boolean(editing)}
          onChange={(e) =>
            setDraft((d) => ({ ...d, type: (e.currentTarget as HTMLSelectElement).value as RecordType }))
          }
          data-testid="record-type"
        >
          {RECORD_TYPES.map((x) => (
            <option key={x} value={x}>
              {x}
            </option>
          ))}
        </select>
      </div>
      {shown.map((f) => {
        const id = `record-${f}`
        const fieldError = errorField === f ? describeFailure(error) : null
        return (
          <div class="field" key={f}>
            <label for={id}>{t(`field.${f}`)}</label>
            {f === 'content' && draft.type === 'TXT' ? (
              <textarea
                id={id}
                rows={3}
                value={draft[f]}
                aria-invalid={fieldError ? true : undefined}
                aria-describedby={`${id}-hint${fieldError ? ` ${id}-error` : ''}`}
                onInput={(e) => set(f, (e.currentTarget as HTMLTextAreaElement).value)}
                data-testid={id}
              />
            ) : (
              <input
                id={id}
                value={draft[f]}
                inputMode={NUMERIC.includes(f) ? 'numeric' : 'text'}
                spellcheck={false}
                aria-invalid={fieldError ? true : undefined}
                aria-describedby={`${id}-hint${fieldError ? ` ${id}-error` : ''}`}
                onInput={(e) => set(f, (e.currentTarget as HTMLInputElement).value)}
                data-testid={id}
              />
            )}
            <small id={`${id}-hint`} class="muted">
              {t(f === 'content' ? `hint.content.${draft.type}` : `hint.${f}`)}
            </small>
            {fieldError && (
              <small id={`${id}-error`} class="field-error" data-testid="record-field-error">
                {fieldError}
              </small>
            )}
          </div>
        )
      })}
      {error && (!errorField || !shown.includes(errorField as FieldName)) && (
        <Alert kind="error" testId="record-error">
          {describeFailure(error)}
        </Alert>
      )}
      <div class="actions">
        <button type="submit" disabled={busy} data-testid="record-save">
          {t('records.save')}
        </button>
        <button type="button" class="secondary" onClick={onCancel}>
          {t('common.cancel')}
        </button>
      </div>
    </form>
  )
}

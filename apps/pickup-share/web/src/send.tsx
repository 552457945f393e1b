import { useEffect, useRef, useState } from 'preact/hooks'
import {
  ApiFailure,
  checkAuthCode,
  createShare,
  PASSWORD_MAX,
  PASSWORD_MIN,
  pickupLink,
  requestUpload,
  type SiteInfo,
  siteInfo,
  type StoreKind,
  uploadWithProgress,
} from './api.ts'
import { formatBytes, formatDate, formatDuration, t } from './i18n.ts'
import { TextComposer, textFile, usePaste, utf8Bytes } from './text-share.tsx'
import { Alert, CopyButton, describeFailure } from './ui.tsx'
import type { ComponentType } from 'preact'

/**
 * tus-js-client (resumable uploads) and the QR code are loaded when first needed: a file is
 * chosen, a share is made. The script of the first view stays small (README "Web pages").
 */
const resumable = () => import('./resumable.ts')

function LazyQrCode(props: { text: string; label: string }) {
  const [Qr, setQr] = useState<ComponentType<{ text: string; label: string }> | null>(null)
  useEffect(() => {
    void import('./qr.tsx').then((m) => setQr(() => m.QrCode))
  }, [])
  return Qr ? <Qr {...props} /> : null
}

interface Item {
  id: number
  file: File
  sent: number
  state: 'waiting' | 'uploading' | 'done' | 'failed'
  error?: string | undefined
  /** Bytes per second, smoothed; undefined until measured. */
  speed?: number | undefined
  /** Seconds left at that speed. */
  eta?: number | undefined
  /** A previous visit began uploading this file: it resumes where it stopped. */
  resumes?: boolean
  /** Cancels this file's upload. */
  cancel?: AbortController | undefined
}

/** Speed (smoothed over ¼-second steps) and time left from a stream of progress events. */
function progressMeter(report: (p: Pick<Item, 'sent' | 'speed' | 'eta'>) => void) {
  let lastAt = 0
  let lastSent = 0
  let speed: number | undefined
  return (sent: number, total: number) => {
    const now = performance.now()
    if (lastAt === 0 || sent < lastSent) {
      lastAt = now
      lastSent = sent
    } else if (now - lastAt >= 250) {
      const instant = (sent - lastSent) / ((now - lastAt) / 1000)
      speed = speed === undefined ? instant : 0.7 * speed + 0.3 * instant
      lastAt = now
      lastSent = sent
    }
    report({ sent, speed, eta: speed ? (total - sent) / speed : undefined })
  }
}

interface Result {
  code: string
  link: string
  expiresAt: string
  maxDownloads: number | null
  protected: boolean
}

/** What is wrong with a share password the server would refuse (an empty one: none is set). */
function passwordIssue(password: string): string | null {
  if (!password) return null
  if (password.length < PASSWORD_MIN) return t('send.passwordShort', { min: PASSWORD_MIN })
  if (password.length > PASSWORD_MAX) return t('send.passwordLong', { max: PASSWORD_MAX })
  // Headers lose spaces at either end and carry no control characters (README "Password-protected shares").
  if (password.trim() !== password || [...password].some((c) => c.charCodeAt(0) < 0x20 || c === '\u007f'))
    return t('send.passwordSpaces')
  return null
}

let nextId = 1
const PARALLEL = 3

export function SendPage() {
  const [site, setSite] = useState<SiteInfo | null>(null)
  const [loadError, setLoadError] = useState<string | null>(null)
  const [items, setItems] = useState<Item[]>([])
  const [store, setStore] = useState<StoreKind>('blob')
  const [expireDays, setExpireDays] = useState('')
  const [maxDownloads, setMaxDownloads] = useState('')
  const [unlimitedDownloads, setUnlimitedDownloads] = useState(false)
  const [noSizeLimit, setNoSizeLimit] = useState(false)
  const [authCode, setAuthCode] = useState('')
  const [password, setPassword] = useState('')
  const [phase, setPhase] = useState<'edit' | 'checking' | 'uploading' | 'sharing'>('edit')
  const [error, setError] = useState<string | null>(null)
  const [result, setResult] = useState<Result | null>(null)
  const [dragging, setDragging] = useState(false)
  const [text, setText] = useState('')
  const [pasted, setPasted] = useState<number | null>(null)
  const input = useRef<HTMLInputElement>(null)
  const resultHeading = useRef<HTMLHeadingElement>(null)
  /** Set by "Cancel all": the queue stops and every running upload is aborted. */
  const cancelAll = useRef<AbortController | null>(null)

  // Leaving the page while bytes are in flight loses the upload (it can be resumed, but the
  // person may not know): the browser asks first. A ref, set where uploads start and end, so the
  // question stops the moment they do (an effect would follow a render later).
  const inFlight = useRef(false)
  useEffect(() => {
    const warn = (e: BeforeUnloadEvent) => {
      if (!inFlight.current) return
      e.preventDefault()
      e.returnValue = ''
    }
    addEventListener('beforeunload', warn)
    return () => removeEventListener('beforeunload', warn)
  }, [])

  useEffect(() => {
    siteInfo()
      .then((s) => {
        setSite(s)
        setStore(s.stores[0] ?? 'blob')
        setExpireDays(String(s.defaultExpireDays))
        setMaxDownloads(String(s.defaultMaxDownloads))
      })
      .catch((err) => setLoadError(describeFailure(err)))
  }, [])

  useEffect(() => {
    if (result) resultHeading.current?.focus()
  }, [result])

  // Ctrl/Cmd+V anywhere: clipboard files and images join the list, text goes to the text box.
  usePaste(
    (files) => {
      addFiles(files)
      setPasted(files.length)
    },
    (pastedText) => {
      setText((old) => old + pastedText)
      document.getElementById('share-text')?.focus()
    },
    !!site && !result && phase === 'edit',
  )

  if (loadError) return <Alert kind="error">{loadError}</Alert>
  if (!site) return <p aria-busy="true">{t('common.loading')}</p>

  function addFiles(list: FileList | File[] | null) {
    if (!list?.length) return
    const added = [...list].map((file) => ({ id: nextId++, file, sent: 0, state: 'waiting' as const }))
    setItems((old) => [...old, ...added])
    setError(null)
    // Files a previous visit began to upload (reload, crash, lost connection) say they will resume.
    for (const it of added)
      void resumable()
        .then((m) => m.findResumable(it.file, store))
        .then((r) => r && update(it.id, { resumes: true }))
  }
  const update = (id: number, patch: Partial<Item>) =>
    setItems((old) => old.map((it) => (it.id === id ? { ...it, ...patch } : it)))

  const busy = phase !== 'edit'
  const unlimited = unlimitedDownloads || noSizeLimit
  const textBytes = utf8Bytes(text)
  const totalSize = items.reduce((sum, it) => sum + it.file.size, 0)
  const expireNum = Number(expireDays)
  const downloadsNum = Number(maxDownloads)
  const expireInvalid = !Number.isInteger(expireNum) || expireNum < 1 || expireNum > site.maxExpireDays
  const downloadsInvalid =
    !unlimitedDownloads &&
    (!Number.isInteger(downloadsNum) || downloadsNum < 1 || downloadsNum > site.maxDownloadsCap)

  const submit = async (e: Event) => {
    e.preventDefault()
    setError(null)
    if (!items.length && !text.trim()) return setError(t('send.needFiles'))
    if (expireInvalid || downloadsInvalid) return
    if (passwordIssue(password)) return document.getElementById('share-password')?.focus()
    if (textBytes > site.textMaxBytes)
      return setError(
        t('text.tooLarge', { size: formatBytes(textBytes), max: formatBytes(site.textMaxBytes) }),
      )
    if (unlimited && !authCode.trim()) return setError(t('send.needAuthCode'))
    // The text becomes a file of the share, like any other (README "Text shares").
    const all: Item[] = text.trim()
      ? [...items, { id: nextId++, file: textFile(text), sent: 0, state: 'waiting' }]
      : items
    const tooLarge = !noSizeLimit && all.find((it) => it.file.size > site.maxFileSizeBytes)
    if (tooLarge)
      return setError(
        t('send.tooLarge', { name: tooLarge.file.name, max: formatBytes(site.maxFileSizeBytes) }),
      )

    if (unlimited) {
      // The authorization code is checked before the first byte (it is used up only by the share).
      setPhase('checking')
      try {
        await checkAuthCode({
          authCode: authCode.trim(),
          unlimitedDownloads,
          limitSize: noSizeLimit,
        })
      } catch (err) {
        setPhase('edit')
        return setError(describeFailure(err))
      }
    }

    setPhase('uploading')
    const stopAll = new AbortController()
    cancelAll.current = stopAll
    inFlight.current = true
    if (all !== items) {
      setItems(all)
      setText('')
    }
    const extra = noSizeLimit ? { limitSize: true, authCode: authCode.trim() } : {}
    type Uploaded = {
      name: string
      size: number
      type: string
      pathname: string
      store: StoreKind
      proof: string
    }
    const uploaded = new Map<number, Uploaded>()
    // Every attempt uploads every file again: a permission's file can join one share only.
    const queue = [...all]
    let failed = false
    const cancelled = new Set<number>()
    const worker = async () => {
      for (let it = queue.shift(); it && !failed; it = queue.shift()) {
        const type = it.file.type || 'application/octet-stream'
        const id = it.id
        if (stopAll.signal.aborted) {
          cancelled.add(id)
          continue
        }
        const cancel = new AbortController()
        const onCancelAll = () => cancel.abort()
        stopAll.signal.addEventListener('abort', onCancelAll)
        const onProgress = progressMeter((p) => update(id, p))
        try {
          update(id, {
            state: 'uploading',
            sent: 0,
            error: undefined,
            speed: undefined,
            eta: undefined,
            cancel,
          })
          let pathname: string | null = null
          let proof = ''
          let sentTo = store
          const { findResumable, forgetResumable, sendResumable } = await resumable()
          const resumed = await findResumable(it.file, store)
          if (resumed) {
            try {
              pathname = await sendResumable({
                file: it.file,
                store,
                start: { resume: resumed },
                onProgress,
                signal: cancel.signal,
              })
              proof = resumed.proof
            } catch (err) {
              if (err instanceof ApiFailure && err.code === 'aborted') throw err
              // Expired or gone: start again with a new permission.
              await forgetResumable(resumed)
            }
          }
          if (pathname === null) {
            const grant = await requestUpload({
              store,
              name: it.file.name,
              size: it.file.size,
              type,
              ...extra,
            })
            sentTo = grant.store
            proof = grant.proof
            if (grant.tus)
              pathname = await sendResumable({
                file: it.file,
                store,
                start: { grant: { ...grant, tus: grant.tus } },
                onProgress,
                signal: cancel.signal,
              })
            else {
              await uploadWithProgress(grant, it.file, onProgress, cancel.signal)
              pathname = grant.pathname
            }
          }
          update(id, { state: 'done', sent: it.file.size, cancel: undefined, resumes: false })
          uploaded.set(id, { name: it.file.name, size: it.file.size, type, pathname, store: sentTo, proof })
        } catch (err) {
          if (stopAll.signal.aborted) {
            // "Cancel all": the files stay on the list, ready to be sent again.
            cancelled.add(id)
            update(id, { state: 'waiting', sent: 0, cancel: undefined, speed: undefined, eta: undefined })
            continue
          }
          if (err instanceof ApiFailure && err.code === 'aborted') {
            // Cancelled by the person: the file leaves the list, the others go on.
            cancelled.add(id)
            setItems((old) => old.filter((x) => x.id !== id))
            continue
          }
          failed = true
          const message = uploadMessage(err, it.file.name, site)
          update(it.id, { state: 'failed', error: message })
          setError(message)
        } finally {
          stopAll.signal.removeEventListener('abort', onCancelAll)
        }
      }
    }
    await Promise.all(Array.from({ length: Math.min(PARALLEL, queue.length) }, worker))
    inFlight.current = false
    cancelAll.current = null
    if (stopAll.signal.aborted) {
      setPhase('edit')
      setItems((old) => old.map((it) => ({ ...it, state: 'waiting', sent: 0, cancel: undefined })))
      return setError(t('send.cancelled'))
    }
    const sharing = all.filter((it) => !cancelled.has(it.id))
    if (!failed && sharing.length === 0) return setPhase('edit')
    if (failed) {
      setPhase('edit')
      setItems((old) => old.map((it) => (it.state === 'done' ? it : { ...it, state: 'waiting', sent: 0 })))
      return
    }
    setPhase('sharing')
    try {
      const { code, token } = await createShare({
        files: sharing.map((it) => uploaded.get(it.id)!),
        expireDays: expireNum,
        maxDownloads: unlimitedDownloads ? null : downloadsNum,
        ...(unlimited ? { authCode: authCode.trim() } : {}),
        ...(noSizeLimit ? { limitSize: true } : {}),
        ...(password ? { password } : {}),
      })
      // The link opens the share with its token, which no flood of wrong codes can slow down.
      setResult({
        code,
        link: pickupLink(token),
        expiresAt: new Date(Date.now() + expireNum * 86_400_000).toISOString(),
        maxDownloads: unlimitedDownloads ? null : downloadsNum,
        protected: password !== '',
      })
      setPassword('')
    } catch (err) {
      setError(shareMessage(err))
      // Uploaded files cannot join another share; start again from the file list.
      setItems((old) => old.map((it) => ({ ...it, state: 'waiting', sent: 0 })))
    } finally {
      setPhase('edit')
    }
  }

  const reset = () => {
    setItems([])
    setText('')
    setPasted(null)
    setResult(null)
    setAuthCode('')
  }

  if (result)
    return (
      <section class="card result" aria-labelledby="result-title">
        <h1 id="result-title" ref={resultHeading} tabIndex={-1}>
          {t('send.resultTitle')}
        </h1>
        <div class="result-grid">
          <div>
            <p class="label" id="code-label">
              {t('send.resultCode')}
            </p>
            <p class="big-code" data-testid="pickup-code">
              {result.code}
            </p>
            <CopyButton text={result.code} label={t('send.copyCode')} testId="copy-code" />
            <p class="label" id="link-label">
              {t('send.resultLink')}
            </p>
            <p class="link">
              <a href={result.link} data-testid="pickup-link">
                {result.link}
              </a>
            </p>
            <CopyButton text={result.link} label={t('send.copyLink')} />
            {result.protected && (
              <p class="muted" data-testid="result-protected">
                {t('send.protected')}
              </p>
            )}
            <p class="muted">
              {t('send.resultInfo', {
                expires: formatDate(result.expiresAt),
                downloads: result.maxDownloads ?? t('common.unlimited'),
              })}
            </p>
          </div>
          <LazyQrCode text={result.link} label={t('send.qr')} />
        </div>
        <button type="button" onClick={reset}>
          {t('send.again')}
        </button>
      </section>
    )

  return (
    <section aria-labelledby="send-title">
      <h1 id="send-title">{t('send.title')}</h1>
      <p class="muted">{t('send.intro')}</p>
      <form class="card" onSubmit={submit} noValidate>
        <fieldset>
          <legend class="visually-hidden">{t('send.files')}</legend>
          <div
            class={`drop${dragging ? ' dragging' : ''}`}
            onDragOver={(e) => {
              e.preventDefault()
              setDragging(true)
            }}
            onDragLeave={() => setDragging(false)}
            onDrop={(e) => {
              e.preventDefault()
              setDragging(false)
              if (!busy) addFiles(e.dataTransfer?.files ?? null)
            }}
          >
            <p>
              {t('send.drop')}{' '}
              <label class={`file-label${busy ? ' busy' : ''}`}>
                {t('send.choose')}
                <input
                  ref={input}
                  type="file"
                  multiple
                  disabled={busy}
                  class="file-input"
                  data-testid="file-input"
                  onChange={(e) => {
                    const el = e.currentTarget as HTMLInputElement
                    addFiles(el.files)
                    el.value = ''
                  }}
                />
              </label>
            </p>
            <p class="muted small">{t('send.maxSize', { max: formatBytes(site.maxFileSizeBytes) })}</p>
          </div>
          <TextComposer value={text} onInput={setText} maxBytes={site.textMaxBytes} disabled={busy} />
          {pasted !== null && (
            <p class="muted small" role="status" data-testid="pasted">
              {t('text.pasted', { count: pasted })}
            </p>
          )}
          {items.length ? (
            <>
              <p class="muted small" aria-live="polite">
                {t('send.chosen', { count: items.length, size: formatBytes(totalSize) })}
              </p>
              <ul class="files sending" data-testid="file-list">
                {items.map((it) => (
                  <li key={it.id}>
                    <div class="file-row">
                      <span class="file-name">{it.file.name}</span>
                      <span class="muted small">{formatBytes(it.file.size)}</span>
                      <span class={`state ${it.state}`}>
                        {it.state === 'uploading'
                          ? `${Math.floor((100 * it.sent) / Math.max(1, it.file.size))}%`
                          : it.state === 'done'
                            ? t('send.done')
                            : it.state === 'failed'
                              ? t('send.failed')
                              : t('send.waiting')}
                      </span>
                      {it.state === 'uploading' && it.cancel && (
                        <button
                          type="button"
                          class="icon"
                          data-testid="cancel-upload"
                          aria-label={t('send.cancel', { name: it.file.name })}
                          onClick={() => it.cancel?.abort()}
                        >
                          ×
                        </button>
                      )}
                      {!busy && (
                        <button
                          type="button"
                          class="icon"
                          aria-label={t('send.remove', { name: it.file.name })}
                          onClick={() => setItems((old) => old.filter((x) => x.id !== it.id))}
                        >
                          ×
                        </button>
                      )}
                    </div>
                    <progress
                      max={Math.max(1, it.file.size)}
                      value={it.state === 'done' ? Math.max(1, it.file.size) : it.sent}
                      aria-label={t('send.progress', { name: it.file.name })}
                      data-testid="progress"
                    />
                    {it.state === 'uploading' && it.speed !== undefined && (
                      <p class="muted small" data-testid="rate" aria-live="off">
                        {t('send.rate', {
                          speed: formatBytes(it.speed),
                          left: it.eta === undefined ? '…' : formatDuration(it.eta),
                        })}
                      </p>
                    )}
                    {it.state === 'waiting' && it.resumes && (
                      <p class="muted small" data-testid="resumes">
                        {t('send.resumes')}
                      </p>
                    )}
                    {it.error && <p class="field-error">{it.error}</p>}
                  </li>
                ))}
              </ul>
            </>
          ) : (
            <p class="muted small">{t('send.none')}</p>
          )}
        </fieldset>

        <fieldset disabled={busy} class="grid">
          <legend class="visually-hidden">{t('send.submit')}</legend>
          {site.stores.length > 1 && (
            <div class="field">
              <label for="store">{t('send.store')}</label>
              <select
                id="store"
                value={store}
                onChange={(e) => setStore((e.currentTarget as HTMLSelectElement).value as StoreKind)}
              >
                {site.stores.map((s) => (
                  <option key={s} value={s}>
                    {t(`store.${s}`)}
                  </option>
                ))}
              </select>
            </div>
          )}
          <NumberField
            id="expire-days"
            label={t('send.expireDays')}
            hint={t('send.expireHint', { max: site.maxExpireDays })}
            value={expireDays}
            onInput={setExpireDays}
            min={1}
            max={site.maxExpireDays}
            invalid={expireInvalid}
          />
          <NumberField
            id="max-downloads"
            label={t('send.maxDownloads')}
            hint={t('send.maxDownloadsHint', { max: site.maxDownloadsCap })}
            value={unlimitedDownloads ? '' : maxDownloads}
            onInput={setMaxDownloads}
            min={1}
            max={site.maxDownloadsCap}
            invalid={downloadsInvalid}
            disabled={unlimitedDownloads}
          />
          <PasswordField value={password} onInput={setPassword} />
        </fieldset>

        {site.unlimitedEnabled && (
          <fieldset disabled={busy} class="unlimited">
            <legend>{t('send.unlimited')}</legend>
            <p class="muted small">{t('send.unlimitedHint')}</p>
            <label class="check">
              <input
                type="checkbox"
                checked={unlimitedDownloads}
                onChange={(e) => setUnlimitedDownloads((e.currentTarget as HTMLInputElement).checked)}
                data-testid="unlimited-downloads"
              />
              {t('send.unlimitedDownloads')}
            </label>
            <label class="check">
              <input
                type="checkbox"
                checked={noSizeLimit}
                onChange={(e) => setNoSizeLimit((e.currentTarget as HTMLInputElement).checked)}
              />
              {t('send.noSizeLimit')}
            </label>
            {unlimited && (
              <div class="field">
                <label for="auth-code">{t('send.authCode')}</label>
                <input
                  id="auth-code"
                  type="text"
                  autoComplete="off"
                  spellcheck={false}
                  value={authCode}
                  onInput={(e) => setAuthCode((e.currentTarget as HTMLInputElement).value)}
                />
              </div>
            )}
          </fieldset>
        )}

        {error && (
          <Alert kind="error" testId="send-error">
            {error}
          </Alert>
        )}
        <p class="muted small" data-testid="send-count-rule">
          {t('send.countRule')}
        </p>
        <div class="actions">
          <button type="submit" disabled={busy} data-testid="send-submit">
            {phase === 'checking'
              ? t('send.checkingCode')
              : phase === 'uploading'
                ? t('send.uploading')
                : phase === 'sharing'
                  ? t('send.sharing')
                  : t('send.submit')}
          </button>
          {phase === 'uploading' && (
            <button
              type="button"
              class="secondary"
              onClick={() => cancelAll.current?.abort()}
              data-testid="cancel-all"
            >
              {t('send.cancelAll')}
            </button>
          )}
        </div>
      </form>
    </section>
  )
}

/** The share's optional password: its error is tied to the field, as NumberField's are. */
function PasswordField(props: { value: string; onInput: (v: string) => void }) {
  const issue = passwordIssue(props.value)
  return (
    <div class="field">
      <label for="share-password">{t('send.password')}</label>
      <input
        id="share-password"
        type="password"
        autoComplete="new-password"
        maxLength={PASSWORD_MAX + 1}
        value={props.value}
        aria-invalid={issue ? true : undefined}
        aria-describedby={`share-password-hint${issue ? ' share-password-error' : ''}`}
        onInput={(e) => props.onInput((e.currentTarget as HTMLInputElement).value)}
        data-testid="share-password"
      />
      <span id="share-password-hint" class="muted small">
        {t('send.passwordHint')}
      </span>
      {issue && (
        <span id="share-password-error" class="field-error">
          {issue}
        </span>
      )}
    </div>
  )
}

function NumberField(props: {
  id: string
  label: string
  hint: string
  value: string
  onInput: (v: string) => void
  min: number
  max: number
  invalid: boolean
  disabled?: boolean
}) {
  const showError = props.invalid && !props.disabled
  return (
    <div class="field">
      <label for={props.id}>{props.label}</label>
      <input
        id={props.id}
        type="number"
        inputMode="numeric"
        min={props.min}
        max={props.max}
        step={1}
        value={props.value}
        placeholder={props.disabled ? t('common.unlimited') : undefined}
        disabled={props.disabled}
        aria-invalid={showError}
        aria-describedby={`${props.id}-hint${showError ? ` ${props.id}-error` : ''}`}
        onInput={(e) => props.onInput((e.currentTarget as HTMLInputElement).value)}
      />
      <span id={`${props.id}-hint`} class="muted small">
        {props.hint}
      </span>
      {showError && (
        <span id={`${props.id}-error`} class="field-error">
          {t('send.rangeError', { min: props.min, max: props.max })}
        </span>
      )}
    </div>
  )
}

function uploadMessage(err: unknown, name: string, site: SiteInfo): string {
  if (err instanceof ApiFailure && err.code === 'file_too_large')
    return t('send.tooLarge', { name, max: formatBytes(site.maxFileSizeBytes) })
  return `${name}: ${describeFailure(err)}`
}

function shareMessage(err: unknown): string {
  return describeFailure(err)
}

import { useEffect, useRef, useState } from 'preact/hooks'
import {
  ApiFailure,
  checkAuthCode,
  createShare,
  pickupLink,
  type SiteInfo,
  siteInfo,
  type StoreKind,
} from './api.ts'
import {
  cryptoSend,
  E2E_OFF,
  type E2eChoice,
  e2eIssue,
  EncryptionFields,
  sentSize,
  shareKeyFor,
} from './e2e-send.tsx'
import { formatBytes, t } from './i18n.ts'
import {
  NumberField,
  PasswordField,
  passwordIssue,
  progressMeter,
  useLeaveWarning,
  shareMessage,
  UnlimitedFields,
  uploadMessage,
} from './send-fields.tsx'
import { DropZone, type Item, SendFileList } from './send-files.tsx'
import { type Result, ResultView } from './send-result.tsx'
import { resumable, type Uploaded, uploadOne } from './send-upload.ts'
import { TextComposer, textFile, usePaste, utf8Bytes } from './text-share.tsx'
import { Alert, describeFailure } from './ui.tsx'

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
  const [e2e, setE2e] = useState<E2eChoice>(E2E_OFF)
  const [phase, setPhase] = useState<'edit' | 'checking' | 'uploading' | 'sharing'>('edit')
  const [error, setError] = useState<string | null>(null)
  const [result, setResult] = useState<Result | null>(null)
  const [text, setText] = useState('')
  const [pasted, setPasted] = useState<number | null>(null)
  /** Set by "Cancel all": the queue stops and every running upload is aborted. */
  const cancelAll = useRef<AbortController | null>(null)

  // Leaving the page while bytes are in flight: the browser asks first.
  const inFlight = useLeaveWarning()

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
        .then((m) => m.findResumable(it.file, store, 'any'))
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
    if (e2eIssue(e2e)) return document.getElementById('e2e-passphrase')?.focus()
    if (textBytes > site.textMaxBytes)
      return setError(
        t('text.tooLarge', { size: formatBytes(textBytes), max: formatBytes(site.textMaxBytes) }),
      )
    if (unlimited && !authCode.trim()) return setError(t('send.needAuthCode'))
    // The text becomes a file of the share, like any other (README "Text shares").
    const all: Item[] = text.trim()
      ? [...items, { id: nextId++, file: textFile(text), sent: 0, state: 'waiting' }]
      : items
    const tooLarge = !noSizeLimit && all.find((it) => sentSize(it.file.size, e2e) > site.maxFileSizeBytes)
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
    // End to end: the share's key, made here (from the passphrase: a slow KDF), never sent.
    const files = all.map((it) => it.file)
    const key = e2e.on ? await shareKeyFor(e2e, files, store) : null
    const uploaded = new Map<number, Uploaded>()
    // Every attempt uploads every file again: a permission's file can join one share only.
    const queue = [...all]
    let failed = false
    const cancelled = new Set<number>()
    const worker = async () => {
      for (let it = queue.shift(); it && !failed; it = queue.shift()) {
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
          const sealed = key ? await (await cryptoSend()).sealFile(key, it.file, all.indexOf(it)) : undefined
          const file = await uploadOne({
            file: it.file,
            store,
            extra,
            onProgress,
            signal: cancel.signal,
            sealed,
          })
          update(id, { state: 'done', sent: it.file.size, cancel: undefined, resumes: false })
          uploaded.set(id, file)
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
      const names = sharing.map((it) => ({
        name: it.file.name,
        type: it.file.type || 'application/octet-stream',
      }))
      const encryption = key ? await (await cryptoSend()).sealShare(key, names) : undefined
      const { code, token } = await createShare({
        files: sharing.map((it) => uploaded.get(it.id)!),
        ...(encryption ? { encryption } : {}),
        expireDays: expireNum,
        maxDownloads: unlimitedDownloads ? null : downloadsNum,
        ...(unlimited ? { authCode: authCode.trim() } : {}),
        ...(noSizeLimit ? { limitSize: true } : {}),
        ...(password ? { password } : {}),
      })
      // The link opens the share with its token, which no flood of wrong codes can slow down.
      setResult({
        code,
        // A random key travels in the link's fragment only; a passphrase's not at all.
        link:
          key && !key.kdf ? (await cryptoSend()).linkWithKey(pickupLink(token), key.ikm) : pickupLink(token),
        expiresAt: new Date(Date.now() + expireNum * 86_400_000).toISOString(),
        maxDownloads: unlimitedDownloads ? null : downloadsNum,
        protected: password !== '',
        encrypted: key ? e2e.mode : undefined,
      })
      setPassword('')
      setE2e((old) => ({ ...old, passphrase: '' }))
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

  if (result) return <ResultView result={result} onAgain={reset} />

  return (
    <section aria-labelledby="send-title">
      <h1 id="send-title">{t('send.title')}</h1>
      <p class="muted">{t('send.intro')}</p>
      <form class="card" onSubmit={submit} noValidate>
        <fieldset>
          <legend class="visually-hidden">{t('send.files')}</legend>
          <DropZone busy={busy} maxBytes={site.maxFileSizeBytes} onFiles={addFiles} />
          <TextComposer value={text} onInput={setText} maxBytes={site.textMaxBytes} disabled={busy} />
          {pasted !== null && (
            <p class="muted small" role="status" data-testid="pasted">
              {t('text.pasted', { count: pasted })}
            </p>
          )}
          <SendFileList
            items={items}
            busy={busy}
            totalSize={totalSize}
            onRemove={(id) => setItems((old) => old.filter((x) => x.id !== id))}
          />
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
        <EncryptionFields value={e2e} onChange={setE2e} busy={busy} />

        {site.unlimitedEnabled && (
          <UnlimitedFields
            busy={busy}
            unlimited={unlimited}
            unlimitedDownloads={unlimitedDownloads}
            setUnlimitedDownloads={setUnlimitedDownloads}
            noSizeLimit={noSizeLimit}
            setNoSizeLimit={setNoSizeLimit}
            authCode={authCode}
            setAuthCode={setAuthCode}
          />
        )}

        {error && (
          <Alert kind="error" testId="send-error">
            {error}
          </Alert>
        )}
        <p class="muted small" data-testid="send-count-rule">
          {t(e2e.on ? 'e2e.sendCountRule' : 'send.countRule')}
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

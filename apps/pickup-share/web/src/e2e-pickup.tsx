import { useEffect, useRef, useState } from 'preact/hooks'
import { type Access, downloadUrl, type Manifest, type SiteInfo } from './api.ts'
import { plainSize } from './crypto/sizes.ts'
import type { Encryption } from './crypto/keys.ts'
import type { OpenedShare } from './crypto/pickup.ts'
import { preflight } from './download.ts'
import { formatBytes, t } from './i18n.ts'
import { previewKind } from './preview.tsx'
import { Alert, CopyButton } from './ui.tsx'

/**
 * The pickup page of an end-to-end encrypted share (README "End-to-end encrypted shares"): the
 * key from the link's fragment or the passphrase, the names decrypted, each file decrypted by the
 * service worker as the browser downloads it, previews after decryption, and all files as one
 * ZIP made in the browser. The decryption code is loaded only here.
 */
const cryptoPickup = () => import('./crypto/pickup.ts')

interface Props {
  share: { manifest: Manifest; remaining: number | null; access: Access; password?: string }
  encryption: Encryption
  /** The key from the link's fragment (`&k=`), if it came with one. */
  linkKey: string | null
  site: SiteInfo | null
  /** A download or preview was handed over: the page counts it and asks the server again. */
  onCounted: (path: string, byDownload: boolean) => void
  onFailed: (err: unknown, name: string) => void
}

export function EncryptedFiles(props: Props) {
  const { share, encryption } = props
  const [opened, setOpened] = useState<OpenedShare | null>(null)
  const [problem, setProblem] = useState<string | null>(null)
  const [busy, setBusy] = useState(false)
  const [passphrase, setPassphrase] = useState('')
  const [starting, setStarting] = useState<string | null>(null)
  const field = useRef<HTMLInputElement>(null)

  const unlock = async (secret: { link: string } | { passphrase: string }) => {
    setBusy(true)
    setProblem(null)
    try {
      setOpened(await (await cryptoPickup()).unlockShare(encryption, secret))
    } catch {
      setProblem(t('link' in secret ? 'e2e.keyWrong' : 'e2e.passphraseWrong'))
      field.current?.focus()
    } finally {
      setBusy(false)
    }
  }
  useEffect(() => {
    if (encryption.key === 'link' && props.linkKey) void unlock({ link: props.linkKey })
    else field.current?.focus()
  }, [encryption, props.linkKey])

  if (!opened) {
    if (encryption.key === 'link')
      return (
        <Alert kind={problem ? 'error' : 'info'} testId="e2e-problem">
          {problem ?? (props.linkKey ? t('common.loading') : t('e2e.needLink'))}
        </Alert>
      )
    return (
      <form
        class="card"
        noValidate
        onSubmit={(e) => {
          e.preventDefault()
          if (passphrase) void unlock({ passphrase })
        }}
      >
        <div class="field">
          <label for="e2e-passphrase">{t('e2e.passphrase')}</label>
          <input
            ref={field}
            id="e2e-passphrase"
            type="password"
            autoComplete="off"
            value={passphrase}
            aria-describedby={`e2e-passphrase-hint${problem ? ' e2e-passphrase-problem' : ''}`}
            aria-invalid={problem ? true : undefined}
            onInput={(e) => setPassphrase((e.currentTarget as HTMLInputElement).value)}
            data-testid="e2e-passphrase-input"
          />
          <span id="e2e-passphrase-hint" class="muted small">
            {t('e2e.passphrase.ask')}
          </span>
          {problem && (
            <p id="e2e-passphrase-problem" class="alert error" role="alert" data-testid="e2e-problem">
              {problem}
            </p>
          )}
        </div>
        <div class="actions">
          <button type="submit" disabled={busy} data-testid="e2e-decrypt">
            {busy ? t('e2e.deriving') : t('e2e.decrypt')}
          </button>
        </div>
      </form>
    )
  }

  // Decrypting as it downloads needs a service worker (every current browser has them).
  if (!('serviceWorker' in navigator)) return <Alert kind="error">{t('e2e.noWorker')}</Alert>
  const rs = encryption.recordSize
  const files = share.manifest.files.map((f, i) => ({
    ...f,
    name: opened.names[i]?.name ?? f.name,
    type: opened.names[i]?.type ?? 'application/octet-stream',
    url: downloadUrl(share.access, f.path),
    plain: Math.max(0, plainSize(f.size, rs)),
  }))
  const exhausted = share.remaining === 0

  /** Checked first (HEAD, nothing spent), then decrypted by the worker into the browser's download. */
  async function save(
    key: string,
    run: () => Promise<{ ended: Promise<{ ok: boolean; error?: string }> } | null>,
    name: string,
  ) {
    if (starting) return
    setStarting(key)
    try {
      // The file's own HEAD (nothing spent); for the ZIP, every file's.
      for (const f of key === '*all' ? files : files.filter((x) => x.path === key))
        await preflight(f.url, share.access, share.password)
      const started = await run()
      if (!started) throw new Error('archive over 4 GiB')
      void started.ended.then((r) => !r.ok && props.onFailed(new Error(r.error ?? 'failed'), name))
    } catch (err) {
      props.onFailed(err, name)
    } finally {
      setStarting(null)
    }
  }

  return (
    <>
      <p class="muted small" data-testid="e2e-note">
        {t('e2e.pickupNote')}
      </p>
      {!exhausted && files.length > 1 && (
        <p>
          <button
            type="button"
            disabled={starting !== null}
            aria-describedby="e2e-zip-rule"
            data-testid="e2e-download-all"
            onClick={() =>
              void save(
                '*all',
                async () => {
                  const m = await cryptoPickup()
                  const ended = await m.saveZip(
                    opened.key,
                    rs,
                    files.map(cipherFile),
                    `pickup-${share.manifest.code}.zip`,
                  )
                  if (ended) for (const f of files) props.onCounted(f.path, true)
                  return ended
                },
                `pickup-${share.manifest.code}.zip`,
              )
            }
          >
            {t('e2e.downloadAll')}
          </button>{' '}
          <span id="e2e-zip-rule" class="muted small">
            {t('e2e.zipCounts')}
          </span>
        </p>
      )}
      <h2>{t('pickup.files')}</h2>
      <ul class="files card" data-testid="manifest">
        {files.map((f) => {
          const kind = previewKind({ type: f.type, size: f.plain }, props.site)
          return (
            <li key={f.path}>
              <div class="file-row">
                <span class="file-name">{f.name}</span>
                <span class="muted small">{formatBytes(f.plain)}</span>
                {exhausted ? (
                  <span class="muted small">{t('pickup.exhausted')}</span>
                ) : (
                  <button
                    type="button"
                    disabled={starting !== null}
                    aria-label={t('pickup.downloadName', { name: f.name })}
                    data-testid="download"
                    onClick={() =>
                      void save(
                        f.path,
                        async () => {
                          const started = await (
                            await cryptoPickup()
                          ).saveDecrypted(opened.key, rs, cipherFile(f))
                          props.onCounted(f.path, true)
                          return started
                        },
                        f.name,
                      )
                    }
                  >
                    {t('pickup.download')}
                  </button>
                )}
              </div>
              {kind && !exhausted && (
                <DecryptedPreview
                  file={f}
                  kind={kind}
                  open={opened}
                  rs={rs}
                  onShown={() => props.onCounted(f.path, false)}
                  onFailed={(err) => props.onFailed(err, f.name)}
                />
              )}
            </li>
          )
        })}
      </ul>
    </>
  )
}

const cipherFile = (f: { url: string; name: string; type: string; size: number }) => ({
  url: f.url,
  name: f.name,
  type: f.type,
  cipherSize: f.size,
})

/** A preview after decryption, behind a Show button: showing it counts as this receiver's download. */
function DecryptedPreview(props: {
  file: { name: string; type: string; size: number; url: string }
  kind: string
  open: OpenedShare
  rs: number
  onShown: () => void
  onFailed: (err: unknown) => void
}) {
  const [text, setText] = useState<string | null>(null)
  const [frame, setFrame] = useState<string | null>(null)
  const [media, setMedia] = useState<string | null>(null)
  // The blob's address lives as long as the preview.
  useEffect(() => () => void (media && URL.revokeObjectURL(media)), [media])
  const show = async () => {
    try {
      const m = await cryptoPickup()
      if (props.kind === 'text') setText(await m.decryptText(props.open.key, props.file.url))
      else if (props.kind === 'audio' || props.kind === 'video')
        setMedia(URL.createObjectURL(await m.decryptMedia(props.open.key, props.file.url, props.file.type)))
      else setFrame(await m.previewFrame(props.open.key, props.rs, cipherFile(props.file)))
      props.onShown()
    } catch (err) {
      props.onFailed(err)
    }
  }
  if (text !== null)
    return (
      <div class="preview">
        <pre class="preview-text" data-testid="e2e-preview-text">
          {text}
        </pre>
        <CopyButton text={text} label={t('preview.copyText')} />
      </div>
    )
  if (media)
    return (
      <div class="preview">
        {props.kind === 'audio' ? (
          <audio controls src={media} aria-label={props.file.name} data-testid="e2e-preview-audio" />
        ) : (
          <video
            controls
            src={media}
            aria-label={props.file.name}
            class="preview-video"
            data-testid="e2e-preview-video"
          />
        )}
      </div>
    )
  if (frame)
    return (
      <div class="preview">
        <iframe class="preview-pdf" src={frame} title={props.file.name} data-testid="e2e-preview-frame" />
      </div>
    )
  return (
    <p>
      <button
        type="button"
        class="secondary"
        aria-label={t('preview.showName', { name: props.file.name })}
        data-testid="e2e-show"
        onClick={() => void show()}
      >
        {t('preview.show')}
      </button>
    </p>
  )
}

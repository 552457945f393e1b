import type { ComponentProps, RefObject } from 'preact'
import { useEffect, useState } from 'preact/hooks'
import { type Access, downloadUrl, type Manifest, type SiteInfo } from './api.ts'
import { downloadAllUrl } from './download.ts'
import { formatBytes, t } from './i18n.ts'
import { FilePreview, previewKind } from './preview.tsx'
import type { EncryptedFiles as EncryptedView } from './e2e-pickup.tsx'

/** The pickup page's list of a share's files (not encrypted: the server sends them as they are). */
export function PlainFiles(props: {
  share: { manifest: Manifest; remaining: number | null; access: Access }
  site: SiteInfo | null
  counted: ReadonlyMap<string, 'shown' | 'downloaded'>
  starting: string | null
  onDownload: (key: string, url: string, name: string) => void
  onShown: (path: string) => void
}) {
  const { share, site, counted, starting } = props
  const exhausted = share.remaining === 0
  const previews = share.manifest.files.filter((f) => previewKind(f, site) !== null).length
  // Shown at once when every preview can be paid for; otherwise each behind a Show button.
  const autoPreview = share.remaining === null || share.remaining >= previews
  return (
    <>
      {!exhausted && share.manifest.files.length > 1 && (
        <p>
          <a
            class="button"
            href={downloadAllUrl(share.access)}
            download={`pickup-${share.manifest.code}.zip`}
            aria-describedby="count-rule"
            aria-disabled={starting !== null ? true : undefined}
            aria-busy={starting === '*all' ? true : undefined}
            onClick={(e) => {
              e.preventDefault()
              props.onDownload('*all', downloadAllUrl(share.access), `pickup-${share.manifest.code}.zip`)
            }}
            data-testid="download-all"
          >
            {t('pickup.downloadAll')}
          </a>
        </p>
      )}
      <h2>{t('pickup.files')}</h2>
      {previews > 0 && share.remaining !== null && (
        <p class="muted small" data-testid="preview-note">
          {t('preview.note')}
        </p>
      )}
      <ul class="files card" data-testid="manifest">
        {share.manifest.files.map((f) => {
          const kind = previewKind(f, site)
          return (
            <li key={f.path}>
              <div class="file-row">
                <span class="file-name">{f.name}</span>
                <span class="muted small">{formatBytes(f.size)}</span>
                {exhausted && counted.get(f.path) !== 'shown' ? (
                  <span class="muted small">{t('pickup.exhausted')}</span>
                ) : (
                  <a
                    class="button"
                    href={downloadUrl(share.access, f.path)}
                    download={f.name}
                    aria-label={t('pickup.downloadName', { name: f.name })}
                    aria-disabled={starting !== null ? true : undefined}
                    aria-busy={starting === f.path ? true : undefined}
                    onClick={(e) => {
                      e.preventDefault()
                      props.onDownload(f.path, downloadUrl(share.access, f.path), f.name)
                    }}
                    data-testid="download"
                  >
                    {t('pickup.download')}
                  </a>
                )}
              </div>
              {kind && (!exhausted || counted.has(f.path)) && (
                <FilePreview
                  access={share.access}
                  file={f}
                  kind={kind}
                  auto={autoPreview || counted.has(f.path)}
                  onCounted={props.onShown}
                />
              )}
            </li>
          )
        })}
      </ul>
    </>
  )
}

/** A protected share's password, asked under the code field. */
export function PasswordFields(props: {
  inputRef: RefObject<HTMLInputElement | null>
  value: string
  onInput: (v: string) => void
  problem: string | null
  busy: boolean
}) {
  return (
    <>
      <div class="field" style={{ marginTop: '16px' }}>
        <label for="share-password">{t('pickup.password')}</label>
        <input
          ref={props.inputRef}
          id="share-password"
          type="password"
          autoComplete="current-password"
          maxLength={1024}
          value={props.value}
          aria-describedby={`password-hint${props.problem ? ' password-problem' : ''}`}
          aria-invalid={props.problem ? true : undefined}
          onInput={(e) => props.onInput((e.currentTarget as HTMLInputElement).value)}
          data-testid="password-input"
        />
        <span id="password-hint" class="muted small">
          {t('pickup.passwordHint')}
        </span>
        {props.problem && (
          <p id="password-problem" class="alert error" role="alert" data-testid="password-problem">
            {props.problem}
          </p>
        )}
      </div>
      <div class="actions">
        <button type="submit" disabled={props.busy} data-testid="unlock">
          {props.busy ? t('pickup.checking') : t('pickup.unlock')}
        </button>
      </div>
    </>
  )
}

type EncryptedProps = ComponentProps<typeof EncryptedView>

/** An encrypted share's view, loaded when such a share opens (the first view stays small). */
export function EncryptedFiles(props: EncryptedProps) {
  const [View, setView] = useState<((p: EncryptedProps) => preact.JSX.Element) | null>(null)
  useEffect(() => {
    void import('./e2e-pickup.tsx').then((m) => setView(() => m.EncryptedFiles))
  }, [])
  return View ? <View {...props} /> : <p aria-busy="true">{t('common.loading')}</p>
}

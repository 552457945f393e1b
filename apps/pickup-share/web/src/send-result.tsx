import { useEffect, useRef, useState } from 'preact/hooks'
import type { ComponentType } from 'preact'
import { formatDate, t } from './i18n.ts'
import { CopyButton } from './ui.tsx'

/** The QR code is loaded when a share is made: the script of the first view stays small. */
function LazyQrCode(props: { text: string; label: string }) {
  const [Qr, setQr] = useState<ComponentType<{ text: string; label: string }> | null>(null)
  useEffect(() => {
    void import('./qr.tsx').then((m) => setQr(() => m.QrCode))
  }, [])
  return Qr ? <Qr {...props} /> : null
}

/** What the send page shows once the share is made. */
export interface Result {
  code: string
  link: string
  expiresAt: string
  maxDownloads: number | null
  protected: boolean
  /** Encrypted end to end, and how the key travels. */
  encrypted?: 'link' | 'passphrase' | undefined
}

export function ResultView(props: { result: Result; onAgain: () => void }) {
  const heading = useRef<HTMLHeadingElement>(null)
  // The result is announced: the focus moves to its heading.
  useEffect(() => heading.current?.focus(), [])
  return (
    <section class="card result" aria-labelledby="result-title">
      <h1 id="result-title" ref={heading} tabIndex={-1}>
        {t('send.resultTitle')}
      </h1>
      <div class="result-grid">
        <div>
          <p class="label" id="code-label">
            {t('send.resultCode')}
          </p>
          <p class="big-code" data-testid="pickup-code">
            {props.result.code}
          </p>
          <CopyButton text={props.result.code} label={t('send.copyCode')} testId="copy-code" />
          <p class="label" id="link-label">
            {t('send.resultLink')}
          </p>
          <p class="link">
            <a href={props.result.link} data-testid="pickup-link">
              {props.result.link}
            </a>
          </p>
          <CopyButton text={props.result.link} label={t('send.copyLink')} />
          {props.result.encrypted && (
            <p class="muted" data-testid="result-encrypted">
              {t(props.result.encrypted === 'link' ? 'e2e.resultLink' : 'e2e.resultPassphrase')}
            </p>
          )}
          {props.result.protected && (
            <p class="muted" data-testid="result-protected">
              {t('send.protected')}
            </p>
          )}
          <p class="muted">
            {t('send.resultInfo', {
              expires: formatDate(props.result.expiresAt),
              downloads: props.result.maxDownloads ?? t('common.unlimited'),
            })}
          </p>
        </div>
        <LazyQrCode text={props.result.link} label={t('send.qr')} />
      </div>
      <button type="button" onClick={props.onAgain}>
        {t('send.again')}
      </button>
    </section>
  )
}

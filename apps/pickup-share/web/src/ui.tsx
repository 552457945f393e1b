import qrcode from 'qrcode-generator'
import { useMemo, useState } from 'preact/hooks'
import { ApiFailure } from './api.ts'
import { t } from './i18n.ts'

/** A copy button that says whether it worked (in a live region). */
export function CopyButton({ text, label, testId }: { text: string; label: string; testId?: string }) {
  const [state, setState] = useState<'idle' | 'ok' | 'failed'>('idle')
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text)
      setState('ok')
    } catch {
      setState('failed')
    }
    setTimeout(() => setState('idle'), 2500)
  }
  return (
    <span class="copy">
      <button type="button" class="secondary" onClick={copy} data-testid={testId}>
        {label}
      </button>
      <span role="status" class="copy-status">
        {state === 'ok' ? t('common.copied') : state === 'failed' ? t('common.copyFailed') : ''}
      </span>
    </span>
  )
}

/** The QR code of a text as SVG rectangles (no data: URL, no inline markup strings). */
export function QrCode({ text, label }: { text: string; label: string }) {
  const { size, path } = useMemo(() => {
    const qr = qrcode(0, 'M')
    qr.addData(text)
    qr.make()
    const count = qr.getModuleCount()
    let d = ''
    for (let row = 0; row < count; row++)
      for (let col = 0; col < count; col++) if (qr.isDark(row, col)) d += `M${col + 4} ${row + 4}h1v1h-1z`
    return { size: count + 8, path: d }
  }, [text])
  return (
    <svg
      class="qr"
      viewBox={`0 0 ${size} ${size}`}
      role="img"
      aria-label={label}
      shape-rendering="crispEdges"
    >
      <rect width={size} height={size} fill="#fff" />
      <path d={path} fill="#000" />
    </svg>
  )
}

/** A message for an API failure that no page-specific message covers. */
export function describeFailure(err: unknown): string {
  if (err instanceof ApiFailure) {
    if (err.code === 'network') return t('common.network')
    return t('common.error', { message: err.message })
  }
  return t('common.error', { message: err instanceof Error ? err.message : String(err) })
}

export function Alert({
  kind,
  children,
  testId,
}: {
  kind: 'error' | 'ok' | 'info'
  children: unknown
  testId?: string
}) {
  return (
    <p class={`alert ${kind}`} role={kind === 'error' ? 'alert' : 'status'} data-testid={testId}>
      {children as never}
    </p>
  )
}

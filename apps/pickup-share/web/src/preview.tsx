import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks'
import { type Access, previewUrl, type SiteInfo } from './api.ts'
import { t } from './i18n.ts'
import { CopyButton } from './ui.tsx'
import './preview.css'

// Issue 25: the pickup page shows a file before it is downloaded. The server decides what may be
// shown (GET /api/preview: an allow list of types, below the admin's size); this list mirrors it so
// the page offers a preview only where the server will give one.
export type PreviewKind = 'text' | 'image' | 'audio' | 'video' | 'pdf'

const KINDS: Record<string, PreviewKind> = {
  'text/plain': 'text',
  'image/png': 'image',
  'image/jpeg': 'image',
  'image/gif': 'image',
  'image/webp': 'image',
  'image/avif': 'image',
  'audio/mpeg': 'audio',
  'audio/ogg': 'audio',
  'audio/wav': 'audio',
  'audio/x-wav': 'audio',
  'audio/webm': 'audio',
  'audio/mp4': 'audio',
  'audio/aac': 'audio',
  'audio/flac': 'audio',
  'video/mp4': 'video',
  'video/webm': 'video',
  'video/ogg': 'video',
  'application/pdf': 'pdf',
}

export const isTextType = (type: string) => type.split(';')[0]!.trim().toLowerCase() === 'text/plain'

/** How a file would be previewed on this site, or null when it is only downloaded. */
export function previewKind(
  file: { type: string; size: number },
  site: Pick<SiteInfo, 'previewEnabled' | 'previewMaxBytes'> | null,
): PreviewKind | null {
  if (!site?.previewEnabled || file.size > site.previewMaxBytes) return null
  return KINDS[file.type.split(';')[0]!.trim().toLowerCase()] ?? null
}

interface PreviewProps {
  access: Access
  file: { name: string; size: number; type: string; path: string }
  kind: PreviewKind
  /** Shown at once; otherwise behind a Show button (too few downloads left for every preview). */
  auto: boolean
  /** The preview was asked for: it counts as this receiver's download of the file. */
  onCounted: (path: string) => void
}

/** One file's preview: text (as text, never markup), an image, audio, video or a PDF. */
export function FilePreview({ access, file, kind, auto, onCounted }: PreviewProps) {
  const [shown, setShown] = useState(auto)
  useEffect(() => {
    if (shown) onCounted(file.path)
  }, [shown])
  if (!shown)
    return (
      <button
        type="button"
        class="secondary small"
        aria-label={t('preview.showName', { name: file.name })}
        onClick={() => setShown(true)}
        data-testid="show-preview"
      >
        {t('preview.show')}
      </button>
    )
  const src = previewUrl(access, file.path)
  return (
    <figure class="preview" data-testid="preview" data-kind={kind}>
      {kind === 'text' && <TextPreview src={src} name={file.name} />}
      {kind === 'image' && <ImagePreview src={src} name={file.name} />}
      {kind === 'audio' && <audio controls preload="metadata" src={src} data-testid="preview-audio" />}
      {kind === 'video' && (
        <video
          controls
          preload="metadata"
          playsInline
          src={src}
          class="preview-video"
          data-testid="preview-video"
        />
      )}
      {kind === 'pdf' && (
        <>
          <iframe
            src={src}
            title={t('preview.pdf', { name: file.name })}
            class="preview-pdf"
            data-testid="preview-pdf"
          />
          <a href={src} target="_blank" rel="noopener noreferrer" class="small">
            {t('preview.openPdf')}
          </a>
        </>
      )}
    </figure>
  )
}

function ImagePreview({ src, name }: { src: string; name: string }) {
  const [failed, setFailed] = useState(false)
  if (failed) return <p class="muted small">{t('preview.broken')}</p>
  return (
    <img
      src={src}
      alt={t('preview.title', { name })}
      class="preview-image"
      onError={() => setFailed(true)}
      data-testid="preview-image"
    />
  )
}

function TextPreview({ src, name }: { src: string; name: string }) {
  const [text, setText] = useState<string | null>(null)
  const [problem, setProblem] = useState<string | null>(null)
  const [mono, setMono] = useState(false)
  const pre = useRef<HTMLPreElement>(null)

  useEffect(() => {
    let live = true
    ;(async () => {
      const res = await fetch(src, { credentials: 'same-origin' })
      if (!res.ok) {
        let message = res.statusText || `HTTP ${res.status}`
        try {
          message = ((await res.json()) as { error: { message: string } }).error.message
        } catch {
          // not the envelope
        }
        if (live) setProblem(res.status === 404 ? t('preview.gone') : t('preview.failed', { message }))
        return
      }
      // The bytes as UTF-8 (what the send page writes); never parsed as markup.
      const decoded = new TextDecoder('utf-8').decode(await res.arrayBuffer())
      if (live) setText(decoded)
    })().catch(() => live && setProblem(t('common.network')))
    return () => {
      live = false
    }
  }, [src])

  // A layout effect: the text is in the <pre> before anything sees the element (a plain effect
  // left it empty for a moment after it appeared, which a test reading it at once caught).
  useLayoutEffect(() => {
    // textContent: the text is a text node, whatever it says (<script>, HTML entities, RTL marks).
    if (pre.current && text !== null) pre.current.textContent = text
  }, [text])

  if (problem)
    return (
      <p class="alert error" role="alert" data-testid="preview-problem">
        {problem}
      </p>
    )
  if (text === null) return <p aria-busy="true">{t('preview.loading')}</p>
  return (
    <>
      <pre
        ref={pre}
        class={`preview-text${mono ? ' mono' : ''}`}
        tabIndex={0}
        aria-label={t('preview.title', { name })}
        data-testid="preview-text"
      />
      <div class="preview-actions">
        <CopyButton text={text} label={t('preview.copyText')} testId="copy-text" />
        <button
          type="button"
          class="secondary"
          aria-pressed={mono}
          onClick={() => setMono(!mono)}
          data-testid="monospace"
        >
          {t('preview.monospace')}
        </button>
      </div>
    </>
  )
}

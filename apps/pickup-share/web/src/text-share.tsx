import { useEffect } from 'preact/hooks'
import { formatBytes, t } from './i18n.ts'

// Issue 25: text typed or pasted on the send page becomes a UTF-8 text/plain file of the share,
// sent through the same permission → upload → /api/share path as any file (README "Text shares").

const encoder = new TextEncoder()
export const utf8Bytes = (text: string) => encoder.encode(text).length

/** The text as a file: UTF-8, text/plain, named for the moment it was sent. */
export function textFile(text: string, now = new Date()): File {
  const stamp = now.toISOString().slice(0, 19).replace('T', '-').replace(/:/g, '')
  return new File([encoder.encode(text)], `${t('text.fileName')}-${stamp}.txt`, {
    type: 'text/plain; charset=utf-8',
  })
}

const editable = (target: EventTarget | null) => {
  const el = target as HTMLElement | null
  return !!el && (el.tagName === 'TEXTAREA' || el.tagName === 'INPUT' || el.isContentEditable)
}

/**
 * Ctrl/Cmd+V anywhere on the page: files and images on the clipboard join the share; text pasted
 * outside a field goes to the text box. Text pasted into a field is left to the field.
 */
export function usePaste(onFiles: (files: File[]) => void, onText: (text: string) => void, enabled: boolean) {
  useEffect(() => {
    if (!enabled) return
    const onPaste = (e: ClipboardEvent) => {
      const data = e.clipboardData
      if (!data) return
      const files = [...data.files]
      if (files.length) {
        e.preventDefault()
        onFiles(files)
        return
      }
      const text = data.getData('text/plain')
      if (text && !editable(e.target)) {
        e.preventDefault()
        onText(text)
      }
    }
    document.addEventListener('paste', onPaste)
    return () => document.removeEventListener('paste', onPaste)
  }, [enabled, onFiles, onText])
}

/** The text box beside the drop zone, with its size against the limit. */
export function TextComposer(props: {
  value: string
  onInput: (v: string) => void
  maxBytes: number
  disabled: boolean
}) {
  const size = utf8Bytes(props.value)
  const over = size > props.maxBytes
  return (
    <div class="field text-box">
      <label for="share-text">{t('text.label')}</label>
      <textarea
        id="share-text"
        value={props.value}
        placeholder={t('text.placeholder')}
        disabled={props.disabled}
        spellcheck={false}
        aria-describedby={`share-text-hint${over ? ' share-text-error' : ''}`}
        aria-invalid={over ? true : undefined}
        onInput={(e) => props.onInput((e.currentTarget as HTMLTextAreaElement).value)}
        data-testid="share-text"
      />
      <span id="share-text-hint" class="muted small">
        {t('text.hint', { max: formatBytes(props.maxBytes) })}
        {props.value
          ? ` ${t('text.size', { size: formatBytes(size), max: formatBytes(props.maxBytes) })}`
          : ''}
      </span>
      {over && (
        <span id="share-text-error" class="field-error" data-testid="share-text-error">
          {t('text.tooLarge', { size: formatBytes(size), max: formatBytes(props.maxBytes) })}
        </span>
      )}
    </div>
  )
}

/** The admin shares list marks shares that are only text. */
export function TextBadge({ files }: { files: Array<{ type: string }> }) {
  const text =
    files.length > 0 && files.every((f) => f.type.split(';')[0]!.trim().toLowerCase() === 'text/plain')
  return text ? (
    <span class="badge" data-testid="text-badge">
      {t('text.adminBadge')}
    </span>
  ) : null
}

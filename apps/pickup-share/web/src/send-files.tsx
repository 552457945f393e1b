import { useState } from 'preact/hooks'
import { formatBytes, formatDuration, t } from './i18n.ts'

/** The send page's list of files: each with its state, progress, speed and buttons. */

export interface Item {
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

export function SendFileList(props: {
  items: Item[]
  busy: boolean
  totalSize: number
  onRemove: (id: number) => void
}) {
  const items = props.items
  return items.length ? (
    <>
      <p class="muted small" aria-live="polite">
        {t('send.chosen', { count: items.length, size: formatBytes(props.totalSize) })}
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
              {!props.busy && (
                <button
                  type="button"
                  class="icon"
                  aria-label={t('send.remove', { name: it.file.name })}
                  onClick={() => props.onRemove(it.id)}
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
  )
}

/** Where files are dropped or chosen (the native control never shows through). */
export function DropZone(props: {
  busy: boolean
  maxBytes: number
  onFiles: (list: FileList | null) => void
}) {
  const [dragging, setDragging] = useState(false)
  return (
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
        if (!props.busy) props.onFiles(e.dataTransfer?.files ?? null)
      }}
    >
      <p>
        {t('send.drop')}{' '}
        <label class={`file-label${props.busy ? ' busy' : ''}`}>
          {t('send.choose')}
          <input
            type="file"
            multiple
            disabled={props.busy}
            class="file-input"
            data-testid="file-input"
            onChange={(e) => {
              const el = e.currentTarget as HTMLInputElement
              props.onFiles(el.files)
              el.value = ''
            }}
          />
        </label>
      </p>
      <p class="muted small">{t('send.maxSize', { max: formatBytes(props.maxBytes) })}</p>
    </div>
  )
}

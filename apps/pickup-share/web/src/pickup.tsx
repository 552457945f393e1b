import { useEffect, useRef, useState } from 'preact/hooks'
import {
  type Access,
  ApiFailure,
  downloadUrl,
  LINK_TOKEN,
  type Manifest,
  type SiteInfo,
  siteInfo,
  take,
} from './api.ts'
import { formatBytes, formatDate, formatWait, t } from './i18n.ts'
import { FilePreview, previewKind } from './preview.tsx'
import { Alert, describeFailure } from './ui.tsx'

type Problem = { kind: 'format' | 'notFound' | 'rateLimited' | 'exhausted' | 'other'; text: string }

export function PickupPage() {
  // A pickup link carries its token in the fragment (/pickup#<token>); older links a code (?code=).
  const linkToken = location.hash.slice(1)
  const initialToken = LINK_TOKEN.test(linkToken) ? linkToken : null
  const initial = initialToken ? '' : (new URLSearchParams(location.search).get('code') ?? '')
  const [codeLength, setCodeLength] = useState<number | null>(null)
  const [site, setSite] = useState<SiteInfo | null>(null)
  // Files this page has counted a download of: shown (their Download is still free) or downloaded.
  const [counted, setCounted] = useState<ReadonlyMap<string, 'shown' | 'downloaded'>>(new Map())
  const [code, setCode] = useState(initial.replace(/\D/g, ''))
  const [busy, setBusy] = useState(false)
  const [problem, setProblem] = useState<Problem | null>(null)
  const [share, setShare] = useState<{
    manifest: Manifest
    remaining: number | null
    access: Access
  } | null>(null)
  const heading = useRef<HTMLHeadingElement>(null)
  const codeInput = useRef<HTMLInputElement>(null)

  useEffect(() => {
    siteInfo()
      .then((s) => {
        setSite(s)
        setCodeLength(s.codeLength)
      })
      .catch(() => setCodeLength(8))
  }, [])

  useEffect(() => {
    if (!codeLength) return
    // Opening once, for the token or code in the link.
    if (initialToken) void openLink(initialToken)
    else if (initial) void open(initial.replace(/\D/g, ''))
  }, [codeLength])

  useEffect(() => {
    // Another link pasted into the address bar while the page is open changes only the fragment.
    const onHashChange = () => {
      const token = location.hash.slice(1)
      if (LINK_TOKEN.test(token)) void openLink(token)
    }
    addEventListener('hashchange', onHashChange)
    return () => removeEventListener('hashchange', onHashChange)
  }, [codeLength])

  useEffect(() => {
    if (share) heading.current?.focus()
  }, [share])

  const length = codeLength ?? 12

  async function open(value: string) {
    setProblem(null)
    if (!/^\d{6,12}$/.test(value)) {
      setProblem({ kind: 'format', text: t('pickup.badFormat', { length }) })
      codeInput.current?.focus()
      return
    }
    setBusy(true)
    try {
      const answer = await take({ code: value })
      setCounted(new Map())
      setShare({ ...answer, access: { code: value } })
      history.replaceState(null, '', `/pickup?code=${value}`)
    } catch (err) {
      setProblem(problemOf(err, length))
      codeInput.current?.focus()
    } finally {
      setBusy(false)
    }
  }

  async function openLink(token: string) {
    setProblem(null)
    setBusy(true)
    try {
      const answer = await take({ token })
      setCounted(new Map())
      setShare({ ...answer, access: { token } })
    } catch (err) {
      // The link is dead (used up, expired, deleted) or mistyped: the code field stays usable.
      setProblem(problemOf(err, length, true))
    } finally {
      setBusy(false)
    }
  }

  // One download is counted per file for this receiver, whether shown or downloaded (README
  // "Previews"); the server has the last word, the page shows what's left.
  const count = (path: string, byDownload: boolean) => {
    const before = counted.get(path)
    setCounted((old) => new Map(old).set(path, byDownload ? 'downloaded' : (old.get(path) ?? 'shown')))
    // A preview after anything, or the Download after a preview, spends nothing more.
    if (byDownload ? before === 'shown' : before !== undefined) return
    setShare((old) => {
      if (!old || old.remaining === null) return old
      const remaining = Math.max(0, old.remaining - 1)
      if (remaining === 0 && byDownload) setProblem({ kind: 'exhausted', text: t('pickup.exhausted') })
      return { ...old, remaining }
    })
  }

  if (share) {
    const exhausted = share.remaining === 0
    const previews = share.manifest.files.filter((f) => previewKind(f, site) !== null).length
    // Shown at once when every preview can be paid for; otherwise each behind a Show button.
    const autoPreview = share.remaining === null || share.remaining >= previews
    return (
      <section aria-labelledby="share-title">
        <h1 id="share-title" ref={heading} tabIndex={-1}>
          {t('pickup.title')} · <span class="mono">{share.manifest.code}</span>
        </h1>
        <dl class="facts card">
          <div>
            <dt>{t('pickup.remaining')}</dt>
            <dd data-testid="remaining">{share.remaining ?? t('common.unlimited')}</dd>
          </div>
          <div>
            <dt>{t('pickup.expires')}</dt>
            <dd>{formatDate(share.manifest.expiresAt)}</dd>
          </div>
        </dl>
        {problem && (
          <Alert kind={problem.kind === 'exhausted' ? 'info' : 'error'} testId="pickup-problem">
            {problem.text}
          </Alert>
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
                      onClick={() => count(f.path, true)}
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
                    onCounted={(path) => count(path, false)}
                  />
                )}
              </li>
            )
          })}
        </ul>
        <p>
          <a
            href="/pickup"
            onClick={(e) => {
              e.preventDefault()
              history.replaceState(null, '', '/pickup')
              setShare(null)
              setProblem(null)
              setCode('')
            }}
          >
            {t('pickup.another')}
          </a>
        </p>
      </section>
    )
  }

  return (
    <section aria-labelledby="pickup-title">
      <h1 id="pickup-title">{t('pickup.title')}</h1>
      <p class="muted" id="pickup-intro">
        {t('pickup.intro', { length })}
      </p>
      <form
        class="card pickup-form"
        noValidate
        onSubmit={(e) => {
          e.preventDefault()
          void open(code)
        }}
      >
        <label for="code">{t('pickup.code')}</label>
        <div class="code-row">
          <input
            ref={codeInput}
            id="code"
            class="code-input"
            type="text"
            inputMode="numeric"
            autoComplete="one-time-code"
            pattern="[0-9]*"
            maxLength={24}
            size={length}
            style={{ '--code-len': String(length) }}
            value={code}
            aria-describedby={`pickup-intro${problem ? ' pickup-problem' : ''}`}
            aria-invalid={problem ? true : undefined}
            onInput={(e) => setCode((e.currentTarget as HTMLInputElement).value.replace(/\D/g, ''))}
            data-testid="code-input"
          />
          <button type="submit" disabled={busy} data-testid="open">
            {busy ? t('pickup.checking') : t('pickup.submit')}
          </button>
        </div>
        {problem && (
          <p
            id="pickup-problem"
            class={`alert error problem-${problem.kind}`}
            role="alert"
            data-testid="pickup-problem"
          >
            {problem.text}
          </p>
        )}
      </form>
    </section>
  )
}

function problemOf(err: unknown, length: number, byLink = false): Problem {
  if (err instanceof ApiFailure) {
    if (err.code === 'share_not_found')
      return { kind: 'notFound', text: t(byLink ? 'pickup.linkNotFound' : 'pickup.notFound') }
    if (err.code === 'rate_limit_exceeded')
      return {
        kind: 'rateLimited',
        // The global throttle is everyone's, not this network's doing.
        text: t(err.details.reason === 'throttle' ? 'pickup.throttled' : 'pickup.rateLimited', {
          wait: formatWait(err.retryAfter ?? 60),
        }),
      }
    if (err.code === 'bad_request') return { kind: 'format', text: t('pickup.badFormat', { length }) }
  }
  return { kind: 'other', text: describeFailure(err) }
}

import { useEffect, useRef, useState } from 'preact/hooks'
import {
  type Access,
  ApiFailure,
  LINK_TOKEN,
  type Manifest,
  type SiteInfo,
  siteInfo,
  take,
  type TakeAnswer,
} from './api.ts'
import { handOff, preflight } from './download.ts'
import { formatDate, formatWait, t } from './i18n.ts'
import { Alert } from './ui.tsx'
import { EncryptedFiles, PasswordFields, PlainFiles } from './pickup-files.tsx'
import type { Encryption } from './crypto/keys.ts'
import { type Problem, problemOf } from './pickup-problems.ts'

/** How long after handing a download to the browser the page asks for the new count. */
const REFRESH_AFTER_MS = 1000

export function PickupPage() {
  // A pickup link carries its token in the fragment (/pickup#<token>); older links a code (?code=).
  // An encrypted share's link also carries its key (`#<token>&k=<key>`): it stays in this page.
  const [linkToken = '', ...fragment] = location.hash.slice(1).split('&')
  const linkKey = new URLSearchParams(fragment.join('&')).get('k')
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
    /** A protected share's password, in this page's memory only: take needs it to count again. */
    password?: string
    /** Encrypted end to end: decrypted in this page (README "End-to-end encrypted shares"). */
    encryption?: Encryption
  } | null>(null)
  const heading = useRef<HTMLHeadingElement>(null)
  const codeInput = useRef<HTMLInputElement>(null)
  // A protected share asked for its password: the code or link it was opened by.
  const [locked, setLocked] = useState<Access | null>(null)
  const [password, setPassword] = useState('')
  const [passwordProblem, setPasswordProblem] = useState<string | null>(null)
  const passwordInput = useRef<HTMLInputElement>(null)

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
      const token = location.hash.slice(1).split('&')[0] ?? ''
      if (LINK_TOKEN.test(token)) void openLink(token)
    }
    addEventListener('hashchange', onHashChange)
    return () => removeEventListener('hashchange', onHashChange)
  }, [codeLength])

  useEffect(() => {
    if (share) heading.current?.focus()
  }, [share])

  useEffect(() => {
    if (locked) passwordInput.current?.focus()
  }, [locked, passwordProblem])

  /** The share opened: its downloads carry the grant a protected share's take returned. */
  function opened(answer: TakeAnswer, access: Access, pw: string | undefined) {
    setCounted(new Map())
    setShare({
      manifest: answer.manifest,
      remaining: answer.remaining,
      access: answer.access ? { ...access, access: answer.access.grant } : access,
      ...(answer.access && pw !== undefined ? { password: pw } : {}),
      ...(answer.encryption ? { encryption: answer.encryption } : {}),
    })
    setLocked(null)
    setPassword('')
    setPasswordProblem(null)
  }

  /** A protected share's answer: ask for (or again for) its password. false for any other failure. */
  function askedForPassword(err: unknown, access: Access, pw: string | undefined): boolean {
    if (!(err instanceof ApiFailure)) return false
    const reason = String(err.details.reason ?? '')
    let text: string | null
    if (err.code === 'share_password_required') text = pw === undefined ? null : t('pickup.passwordRequired')
    else if (err.code === 'share_password_wrong') text = t('pickup.passwordWrong')
    else if (err.code === 'rate_limit_exceeded' && reason.startsWith('password_'))
      text = t('pickup.passwordLimited', { wait: formatWait(err.retryAfter ?? 60) })
    else return false
    setProblem(null)
    setLocked(access)
    setPasswordProblem(text)
    return true
  }

  function submitPassword() {
    if (!locked) return
    // Another code typed meanwhile: open that one afresh (it may need no password, or another).
    if ('code' in locked && locked.code !== code) {
      setLocked(null)
      setPassword('')
      setPasswordProblem(null)
      void open(code)
      return
    }
    if (!password) {
      setPasswordProblem(t('pickup.passwordRequired'))
      return
    }
    if ('token' in locked) void openLink(locked.token, password)
    else void open(code, password)
  }

  const length = codeLength ?? 12

  async function open(value: string, pw?: string) {
    setProblem(null)
    if (!/^\d{6,12}$/.test(value)) {
      setProblem({ kind: 'format', text: t('pickup.badFormat', { length }) })
      codeInput.current?.focus()
      return
    }
    setBusy(true)
    try {
      const answer = await take({ code: value }, pw)
      opened(answer, { code: value }, pw)
      history.replaceState(null, '', `/pickup?code=${value}`)
    } catch (err) {
      if (askedForPassword(err, { code: value }, pw)) return
      setProblem(problemOf(err, length))
      codeInput.current?.focus()
    } finally {
      setBusy(false)
    }
  }

  async function openLink(token: string, pw?: string) {
    setProblem(null)
    setBusy(true)
    try {
      const answer = await take({ token }, pw)
      opened(answer, { token }, pw)
    } catch (err) {
      if (askedForPassword(err, { token }, pw)) return
      // The link is dead (used up, expired, deleted) or mistyped: the code field stays usable.
      setProblem(problemOf(err, length, true))
    } finally {
      setBusy(false)
    }
  }

  // The download under way (its key), so that a second click while one starts does nothing.
  const running = useRef<string | null>(null)
  const [starting, setStarting] = useState<string | null>(null)
  const [notice, setNotice] = useState<string | null>(null)

  /**
   * A download the person can trust: checked first (HEAD: used up, expired, storage failure are
   * said on the page, nothing is spent), then handed to the browser, then the count is asked
   * again from the server. A click while one is starting does nothing.
   */
  async function download(key: string, url: string, name: string) {
    if (!share || running.current) return
    running.current = key
    setStarting(key)
    setProblem(null)
    setNotice(null)
    try {
      await preflight(url, share.access, share.password)
      handOff(url, name)
      if (key !== '*all') count(key, true)
      setNotice(t('pickup.started', { name }))
      await new Promise((resolve) => setTimeout(resolve, REFRESH_AFTER_MS))
      await refresh()
    } catch (err) {
      const p = problemOf(err, length, 'token' in share.access)
      setProblem(
        p.kind === 'other'
          ? { kind: 'other', text: t('pickup.downloadFailed', { name, reason: p.text }) }
          : p,
      )
      if (p.kind === 'exhausted') setShare((old) => old && { ...old, remaining: 0 })
    } finally {
      running.current = null
      setStarting(null)
    }
  }

  /** The downloads left, from the server (it has the last word). */
  async function refresh() {
    if (!share) return
    try {
      const answer = await take(share.access, share.password)
      setShare((old) => old && { ...old, remaining: answer.remaining })
    } catch (err) {
      const p = problemOf(err, length, 'token' in share.access)
      if (p.kind === 'exhausted') {
        setShare((old) => old && { ...old, remaining: 0 })
        setProblem({ kind: 'exhausted', text: t('pickup.exhausted') })
      } else setProblem(p)
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
        {notice && !problem && (
          <Alert kind="ok" testId="pickup-notice">
            {notice}
          </Alert>
        )}
        <p class="muted small" id="count-rule" data-testid="count-rule">
          {t(share.encryption ? 'e2e.countRule' : 'pickup.countRule')}
        </p>
        {share.encryption ? (
          <EncryptedFiles
            share={share}
            encryption={share.encryption}
            linkKey={linkKey}
            site={site}
            onCounted={(path, byDownload) => {
              count(path, byDownload)
              setTimeout(() => void refresh(), REFRESH_AFTER_MS)
            }}
            onFailed={(err, name) => {
              const p = problemOf(err, length, 'token' in share.access)
              setProblem(
                p.kind === 'other' ? { kind: 'other', text: t('e2e.failed', { name, reason: p.text }) } : p,
              )
            }}
          />
        ) : (
          <PlainFiles
            share={share}
            site={site}
            counted={counted}
            starting={starting}
            onDownload={(key, url, name) => void download(key, url, name)}
            onShown={(path) => count(path, false)}
          />
        )}
        <p>
          <a
            href="/pickup"
            onClick={(e) => {
              e.preventDefault()
              history.replaceState(null, '', '/pickup')
              setShare(null)
              setProblem(null)
              setCode('')
              setLocked(null)
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
          if (locked) submitPassword()
          else void open(code)
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
        {locked && (
          <PasswordFields
            inputRef={passwordInput}
            value={password}
            onInput={setPassword}
            problem={passwordProblem}
            busy={busy}
          />
        )}
      </form>
    </section>
  )
}

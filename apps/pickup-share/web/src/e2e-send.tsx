import type { StoreKind } from './api.ts'
import { cipherSize, RECORD_SIZE } from './crypto/sizes.ts'
import { t } from './i18n.ts'

/** The send page's choice of end-to-end encryption (README "End-to-end encrypted shares"). */
export interface E2eChoice {
  on: boolean
  mode: 'link' | 'passphrase'
  passphrase: string
}

/** The encryption code (WebCrypto, aes128gcm) is loaded only for an encrypted share. */
export const cryptoSend = () => import('./crypto/send.ts')

/** The share's key for this choice (a passphrase's through a slow KDF), never sent. */
export const shareKeyFor = async (c: E2eChoice, files: File[], store: StoreKind) =>
  (await cryptoSend()).shareKey(c.mode === 'passphrase' ? c.passphrase : null, files, store)

export const E2E_OFF: E2eChoice = { on: false, mode: 'link', passphrase: '' }
export const PASSPHRASE_MIN = 8

/** The bytes a file takes on the server (encrypted: its aes128gcm body), which the size limit counts. */
export const sentSize = (size: number, c: E2eChoice) => (c.on ? cipherSize(size, RECORD_SIZE) : size)

/** What is wrong with the choice (a passphrase too short), or null. */
export const e2eIssue = (c: E2eChoice): string | null =>
  c.on && c.mode === 'passphrase' && c.passphrase.length < PASSPHRASE_MIN ? t('e2e.passphraseShort') : null

export function EncryptionFields(props: {
  value: E2eChoice
  onChange: (c: E2eChoice) => void
  busy: boolean
}) {
  const c = props.value
  const set = (patch: Partial<E2eChoice>) => props.onChange({ ...c, ...patch })
  const issue = c.passphrase ? e2eIssue(c) : null
  return (
    <fieldset disabled={props.busy} class="unlimited" data-testid="e2e-fields">
      <legend>{t('e2e.legend')}</legend>
      <label class="check">
        <input
          type="checkbox"
          checked={c.on}
          onChange={(e) => set({ on: (e.currentTarget as HTMLInputElement).checked })}
          aria-describedby="e2e-hint"
          data-testid="e2e-on"
        />
        {t('e2e.encrypt')}
      </label>
      <p id="e2e-hint" class="muted small">
        {t('e2e.hint')}
      </p>
      {c.on && (
        <>
          <label class="check">
            <input
              type="radio"
              name="e2e-mode"
              checked={c.mode === 'link'}
              onChange={() => set({ mode: 'link' })}
              data-testid="e2e-mode-link"
            />
            {t('e2e.keyLink')}
          </label>
          <label class="check">
            <input
              type="radio"
              name="e2e-mode"
              checked={c.mode === 'passphrase'}
              onChange={() => set({ mode: 'passphrase' })}
              data-testid="e2e-mode-passphrase"
            />
            {t('e2e.keyPassphrase')}
          </label>
          {c.mode === 'passphrase' && (
            <div class="field">
              <label for="e2e-passphrase">{t('e2e.passphrase')}</label>
              <input
                id="e2e-passphrase"
                type="password"
                autoComplete="new-password"
                value={c.passphrase}
                aria-invalid={issue ? true : undefined}
                aria-describedby={`e2e-passphrase-hint${issue ? ' e2e-passphrase-error' : ''}`}
                onInput={(e) => set({ passphrase: (e.currentTarget as HTMLInputElement).value })}
                data-testid="e2e-passphrase"
              />
              <span id="e2e-passphrase-hint" class="muted small">
                {t('e2e.passphraseHint')}
              </span>
              {issue && (
                <span id="e2e-passphrase-error" class="field-error">
                  {issue}
                </span>
              )}
            </div>
          )}
        </>
      )}
    </fieldset>
  )
}

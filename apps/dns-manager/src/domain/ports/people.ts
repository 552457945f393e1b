import type { AccountRow } from './rows.ts'

// The back office's sign-in, sessions and mailed links (domain/people.ts).

/** Single-use links: `invite` (may sign up while REGISTRATION=invite), `signup`, `reset`. */
export type WebTokenKind = 'invite' | 'signup' | 'reset'
export interface WebTokenRow {
  kind: WebTokenKind
  email: string | null
  accountId: string | null
  /** A signup token made through an invitation: the invitation's hash (used up with it). */
  inviteHash: string | null
  expiresAt: Date
}

export interface PeopleStore {
  /** The account of an address (case-insensitive) and its password hash; null hash: none set yet. */
  findLogin(email: string): Promise<{ account: AccountRow; passwordHash: string | null } | null>
  passwordHashOf(accountId: string): Promise<string | null>
  /** Sets the password and ends every session of the account, in one transaction. */
  setPassword(accountId: string, passwordHash: string, now: Date): Promise<void>
  createToken(tokenHash: string, token: WebTokenRow): Promise<void>
  /** The token when it is of this kind, unused and unexpired (nothing is spent). */
  peekToken(tokenHash: string, kind: WebTokenKind, now: Date): Promise<WebTokenRow | null>
  /**
   * Completes a sign-up in one transaction: spends the signup token and the invitation it came
   * through (each single-use, exact under concurrency) and creates the account with its password.
   */
  completeSignup(input: {
    tokenHash: string
    now: Date
    passwordHash: string
    quotaTotal: number
    balanceCents: number
  }): Promise<AccountRow | 'invalid' | 'taken'>
  /** Spends a reset token and sets the password (ending every session), in one transaction; null: no such token. */
  completeReset(tokenHash: string, now: Date, passwordHash: string): Promise<string | null>
}

export interface WebSessionStore {
  createSession(session: {
    idHash: string
    accountId: string
    ip: string | null
    now: Date
    expiresAt: Date
  }): Promise<void>
  /** The live session (idle and absolute limits checked in the query), its last use moved to `now`. */
  resumeSession(
    idHash: string,
    now: Date,
    idleMs: number,
  ): Promise<{ accountId: string; createdAt: Date; account: AccountRow } | null>
  deleteSession(idHash: string): Promise<void>
}

/** Outgoing mail (an SMTP transport, or the log when none is configured). */
export interface Mailer {
  send(message: { to: string; subject: string; text: string }): Promise<void>
}

import type { CredentialScope } from './ports.ts'

/** Who is calling: the outcome of the authentication steps of the pipeline. */
export interface Principal {
  accountId: string
  credentialId: string
  apiKey: string
  ip: string | undefined
  /** The account as authentication read it, in this request. */
  account: { quotaTotal: number; balanceCents: number }
  /** What the credential may do (see `scopes`, and acme.ts for what an `acme` one may). */
  scope: CredentialScope
  /** The subdomain a scoped credential acts on. */
  scopeSubdomainId: number | null
  /**
   * The account's version tokens as this request read them before any database read, when they
   * vouch for what it reads (ports/views.ts, ViewCache): its reads may be answered from, and kept in,
   * the account's views cache. Absent or null: straight to the database.
   */
  viewToken?: string | null
  /** `web`: a back-office session (people.ts), not an API credential; `credentialId` is then `web:<account>`. */
  via?: 'api' | 'web'
}

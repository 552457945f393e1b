// The account's cached reads (domain/views.ts).

/** What the account's views cache says of a value: when it stops being true on its own (ms), if ever. */
export interface ViewLoad<T> {
  value: T
  /** Epoch ms after which the value is out of date without any write (a subdomain's status turns). */
  validUntil?: number
}

/**
 * The answers of an account's reads (its quota, pages of subdomains and records), kept per
 * process under the account's version token (store/view-cache.ts): every committed change to
 * what they show replaces that token before it is answered (PRINCIPAL_CHANGES), so a replica
 * whose request read the new token reads the database again. A cached value is frozen and shared
 * by every request that reads it.
 */
export interface ViewCache {
  read<T extends object>(
    accountId: string,
    /** The principal's vouched token (null: read and answer, cache nothing). */
    token: string | null,
    key: string,
    load: () => Promise<ViewLoad<T>>,
  ): Promise<T>
  /**
   * Whether every one of `values` is the one this cache would hand a request vouched by `token`
   * now (the same object, still kept, under that token, neither too old nor past its own time):
   * an answer made of such values alone is still the answer (http/answer-memo.ts).
   */
  holds(values: readonly unknown[], token: string | null): boolean
}

/**
 * Cache reads out, by key, each under the version token it was asked with, so that the requests
 * that miss one cached value at once share one read of it (key-info's key records, dns-manager's
 * principals and views). When a busy key's entry ages out, or a change replaces its token, every
 * request it has in flight misses together: without this, fifty connections made fifty reads.
 *
 * Joining is as good as a read of one's own only under the token rule those caches keep: a
 * change replaces the token before it answers, so a request sent after that answer asks with
 * another token and never joins an older read. So a read asked without a token (null) is never
 * shared, and `clear()` must be called when kv may have lost tokens (the caches' onLost), so no
 * read begun before is joined after. A failed read fails those that joined it; the next miss
 * reads again.
 */
export interface Read<T> {
  read: Promise<T>
  /** When the read began (the `now` of the caller that began it). */
  began: number
  /** Whether it is another caller's read, out already. */
  joined: boolean
}

export class ReadsInFlight<T> {
  private readonly out = new Map<string, { token: string; began: number; read: Promise<T> }>()

  /**
   * The read of `key` under `token`: the one out (`joined`), with when it began, or else
   * `start()`'s, beginning `now`.
   */
  read(key: string, token: string | null, now: number, start: () => Promise<T>): Read<T> {
    const out = token === null ? undefined : this.out.get(key)
    if (out?.token === token) return { read: out.read, began: out.began, joined: true }
    const read = start()
    if (token === null) return { read, began: now, joined: false }
    const entry = { token, began: now, read }
    this.out.set(key, entry)
    // Registered before any caller awaits the read, so it is forgotten before they resume.
    const forget = () => {
      if (this.out.get(key) === entry) this.out.delete(key)
    }
    read.then(forget, forget)
    return { read, began: now, joined: false }
  }

  /** Forgets every read out: none is joined from now on. */
  clear(): void {
    this.out.clear()
  }
}

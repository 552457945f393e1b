import { type KeyValueStore, MemoryKeyValueStore, type WindowHit } from '@quartet/core/kv'

export type KvMode = 'ok' | 'fail' | 'hang'

/**
 * The memory kv with a switch: `fail` rejects every call as ioredis does while Redis is down
 * (MaxRetriesPerRequestError), `hang` never answers, as a frozen Redis (SIGSTOP) does.
 */
export class FaultyKv implements KeyValueStore {
  readonly kind = 'memory' as const
  mode: KvMode = 'ok'
  /** Calls made while not ok. */
  faultyCalls = 0
  private readonly inner = new MemoryKeyValueStore()

  private call<T>(run: () => Promise<T>): Promise<T> {
    if (this.mode === 'ok') return run()
    this.faultyCalls++
    if (this.mode === 'hang') return new Promise<T>(() => {})
    return Promise.reject(
      Object.assign(new Error('Reached the max retries per request limit (which is 2).'), {
        name: 'MaxRetriesPerRequestError',
      }),
    )
  }

  get = (key: string) => this.call(() => this.inner.get(key))
  getMany = (keys: readonly string[]) => this.call(() => this.inner.getMany(keys))
  set = (key: string, value: string, ttlMs?: number) => this.call(() => this.inner.set(key, value, ttlMs))
  setIfAbsent = (key: string, value: string, ttlMs?: number) =>
    this.call(() => this.inner.setIfAbsent(key, value, ttlMs))
  take = (key: string) => this.call(() => this.inner.take(key))
  del = (key: string) => this.call(() => this.inner.del(key))
  incrWithTtl = (key: string, by: number, ttlMs: number) =>
    this.call(() => this.inner.incrWithTtl(key, by, ttlMs))
  decrIfPositive = (key: string) => this.call(() => this.inner.decrIfPositive(key))
  hitWindow = (key: string, by: number, windowMs: number, reads?: string[]): Promise<WindowHit> =>
    this.call(() => this.inner.hitWindow(key, by, windowMs, reads))
  ttlMs = (key: string) => this.call(() => this.inner.ttlMs(key))
  ping = () => this.call(() => this.inner.ping())
  onReconnect(): () => void {
    return () => {}
  }
  close = () => this.inner.close()
}

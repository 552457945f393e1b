import client from 'prom-client'
import type { GuessGuard } from '../domain/guess-guard.ts'
import type { SharePasswords } from '../domain/share-passwords.ts'

/**
 * The guessing limiter's metrics on the app's registry (served with the pipeline's own metrics).
 * Alert on `pickup_share_guess_throttle_active == 1`: someone is trying many wrong codes and
 * typed codes are being checked slowly (pickup links are not affected).
 */
export function registerGuessMetrics(registry: client.Registry, guard: GuessGuard): void {
  const failures = new client.Counter({
    name: 'pickup_share_guess_failures_total',
    help: 'Pickup code checks (take, download) that found no share or no such file',
    registers: [registry],
  })
  const refused = new client.Counter({
    name: 'pickup_share_guess_refused_total',
    help: 'Pickup code checks refused with 429 before looking: the address budget is spent (address) or the global throttle had no slot (throttle)',
    labelNames: ['reason'] as const,
    registers: [registry],
  })
  const throttled = new client.Counter({
    name: 'pickup_share_guess_throttled_total',
    help: 'Pickup code checks let through by the global throttle while the global failure budget is spent',
    registers: [registry],
  })
  let activeUntil = 0
  new client.Gauge({
    name: 'pickup_share_guess_throttle_active',
    help: '1 while the global failure budget of pickup codes is spent and code checks are throttled (as this process saw it)',
    registers: [registry],
    collect() {
      this.set(Date.now() < activeUntil ? 1 : 0)
    },
  })
  // Both series exist from the start, so an alert can compare them with 0.
  refused.labels('address').inc(0)
  refused.labels('throttle').inc(0)
  guard.observe({
    failure: () => failures.inc(),
    refused: (reason) => refused.labels(reason).inc(),
    throttled: () => throttled.inc(),
    throttleActive: (until) => {
      activeUntil = Math.max(activeUntil, until)
    },
  })
}

/**
 * Password checks of protected shares (README "Guessing passwords"). A rising
 * `pickup_share_password_refused_total{reason="password_share"}` is someone trying many
 * passwords on one share (its receiver may be kept out until the window ends).
 */
export function registerPasswordMetrics(registry: client.Registry, passwords: SharePasswords): void {
  const failures = new client.Counter({
    name: 'pickup_share_password_failures_total',
    help: 'Wrong passwords compared for protected shares (take, download)',
    registers: [registry],
  })
  const refused = new client.Counter({
    name: 'pickup_share_password_refused_total',
    help: 'Password checks refused with 429 before comparing: the address budget (password_address) or the share budget (password_share) is spent',
    labelNames: ['reason'] as const,
    registers: [registry],
  })
  refused.labels('password_address').inc(0)
  refused.labels('password_share').inc(0)
  passwords.observe({
    failure: () => failures.inc(),
    refused: (reason) => refused.labels(reason).inc(),
  })
}

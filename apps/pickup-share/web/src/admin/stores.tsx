import { useEffect, useState } from 'preact/hooks'
import { admin, ApiFailure, type StoreInstance } from '../api.ts'
import { formatBytes, formatPercent, type Key, t } from '../i18n.ts'
import type { PanelProps } from './panel.ts'

export function StoresPanel({ onFailure }: PanelProps) {
  const [stores, setStores] = useState<StoreInstance[] | null>(null)
  const [message, setMessage] = useState<string | null>(null)
  useEffect(() => {
    admin
      .stores()
      .then(setStores)
      .catch((err) => {
        if (err instanceof ApiFailure && err.status === 404) setMessage(t('stores.unavailable'))
        else setMessage(onFailure(err))
      })
  }, [])
  if (message) return <p class="muted">{message}</p>
  if (!stores) return <p aria-busy="true">{t('common.loading')}</p>
  if (!stores.length) return <p class="muted">{t('stores.empty')}</p>
  return (
    <ul class="stores" data-testid="stores">
      {stores.map((s) => {
        const id = `store-${s.id}`
        const used = s.usedBytes + s.reservedBytes
        return (
          <li key={s.id} class="card">
            <p class="store-head">
              <strong id={id}>{s.name}</strong> <span class="badge">{t(`store.${s.kind}` as Key)}</span>
              {!s.enabled && <span class="badge revoked">{t('stores.disabled')}</span>}
            </p>
            {s.quotaBytes ? (
              <meter
                min={0}
                max={s.quotaBytes}
                value={Math.min(used, s.quotaBytes)}
                high={s.quotaBytes * 0.8}
                optimum={0}
                aria-labelledby={id}
                aria-describedby={`${id}-usage`}
              />
            ) : null}
            <p id={`${id}-usage`} class="small">
              {s.quotaBytes
                ? t('stores.usage', {
                    used: formatBytes(s.usedBytes),
                    quota: formatBytes(s.quotaBytes),
                    percent: formatPercent(used, s.quotaBytes),
                  })
                : t('stores.usageNoQuota', { used: formatBytes(s.usedBytes) })}
              {s.reservedBytes > 0 && (
                <> · {t('stores.reserved', { reserved: formatBytes(s.reservedBytes) })}</>
              )}
            </p>
          </li>
        )
      })}
    </ul>
  )
}

import { TableWrap } from '@quartet/web-pages/ui'
import type { ComponentChildren } from 'preact'
import { useEffect, useState } from 'preact/hooks'
import { t } from '../i18n.ts'

/** Below this width lists become cards, so their actions never scroll out of sight. */
export const NARROW_QUERY = '(max-width: 599px)'

/** true while the viewport is narrower than 600 px (follows rotation and resizing). */
export function useNarrow(query = NARROW_QUERY): boolean {
  const [narrow, setNarrow] = useState(() => matchMedia(query).matches)
  useEffect(() => {
    const m = matchMedia(query)
    const on = () => setNarrow(m.matches)
    on()
    m.addEventListener('change', on)
    return () => m.removeEventListener('change', on)
  }, [query])
  return narrow
}

export interface Column<T> {
  key: string
  label: string
  cell: (row: T) => ComponentChildren
  class?: string
}

/**
 * A table on wide screens; under 600 px a list of cards, each headed by the row's title with its
 * actions beside it (visible without scrolling sideways), the other columns as label/value pairs.
 */
export function DataList<T>({
  rows,
  rowKey,
  titleLabel,
  title,
  columns,
  actions,
  labelledBy,
  testId,
}: {
  rows: T[]
  rowKey: (row: T) => string
  titleLabel: string
  title: (row: T) => ComponentChildren
  columns: Array<Column<T>>
  actions?: (row: T) => ComponentChildren
  labelledBy: string
  testId?: string
}) {
  const narrow = useNarrow()
  if (narrow)
    return (
      <ul class="data-cards" aria-labelledby={labelledBy} data-testid={testId}>
        {rows.map((r) => (
          <li key={rowKey(r)} class="data-card">
            <div class="data-card-head">
              <span class="data-card-title">{title(r)}</span>
              {actions && <span class="data-card-actions">{actions(r)}</span>}
            </div>
            <dl>
              {columns.map((c) => (
                <div key={c.key}>
                  <dt>{c.label}</dt>
                  <dd class={c.class}>{c.cell(r)}</dd>
                </div>
              ))}
            </dl>
          </li>
        ))}
      </ul>
    )
  return (
    <TableWrap labelledBy={labelledBy}>
      <table data-testid={testId}>
        <thead>
          <tr>
            <th scope="col">{titleLabel}</th>
            {columns.map((c) => (
              <th key={c.key} scope="col">
                {c.label}
              </th>
            ))}
            {actions && (
              <th scope="col">
                <span class="visually-hidden">{t('shares.actions')}</span>
              </th>
            )}
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr key={rowKey(r)}>
              <td>{title(r)}</td>
              {columns.map((c) => (
                <td key={c.key} class={c.class}>
                  {c.cell(r)}
                </td>
              ))}
              {actions && <td class="row-actions">{actions(r)}</td>}
            </tr>
          ))}
        </tbody>
      </table>
    </TableWrap>
  )
}

// --- sizes in MB / GB ----------------------------------------------------------------------------

export type SizeUnit = 'MB' | 'GB'
export const UNIT_BYTES: Record<SizeUnit, number> = { MB: 1024 ** 2, GB: 1024 ** 3 }

/** A byte count as the form shows it: GB when that is exact to 2 decimals (1.5 GB), else MB. */
export function toSizeField(bytes: number): { amount: string; unit: SizeUnit } {
  const gb = Math.round((bytes / UNIT_BYTES.GB) * 100) / 100
  if (gb >= 1 && Math.round(gb * UNIT_BYTES.GB) === bytes) return { amount: String(gb), unit: 'GB' }
  return { amount: trimNumber(bytes / UNIT_BYTES.MB), unit: 'MB' }
}

/** Two decimals, or up to six for a size under 0.01 MB (so it never shows as 0). */
const trimNumber = (n: number) =>
  String(n >= 0.01 || n === 0 ? Math.round(n * 100) / 100 : Math.round(n * 1e6) / 1e6)

/** The bytes of what was typed ("1.5" GB → 1610612736; up to 6 decimals), or null when it is not a size above 0. */
export function fromSizeField(amount: string, unit: SizeUnit): number | null {
  const raw = amount.trim().replace(',', '.')
  if (!/^\d+(\.\d{1,6})?$/.test(raw)) return null
  const bytes = Math.round(Number(raw) * UNIT_BYTES[unit])
  return bytes >= 1 && bytes <= Number.MAX_SAFE_INTEGER ? bytes : null
}

/** A number field and its MB/GB unit, labelled together (the unit select has its own label). */
export function SizeInput({
  id,
  label,
  amount,
  unit,
  error,
  disabled,
  onChange,
  testId,
}: {
  id: string
  label: string
  amount: string
  unit: SizeUnit
  error?: string | undefined
  disabled?: boolean
  onChange: (amount: string, unit: SizeUnit) => void
  testId?: string
}) {
  return (
    <div class="field">
      <label for={id}>{label}</label>
      <div class="size-input">
        <input
          id={id}
          type="text"
          inputMode="decimal"
          autoComplete="off"
          value={amount}
          disabled={disabled}
          aria-invalid={error ? true : undefined}
          aria-describedby={error ? `${id}-error` : undefined}
          onInput={(e) => onChange((e.currentTarget as HTMLInputElement).value, unit)}
          data-testid={testId ?? id}
        />
        <select
          aria-label={`${label}: ${t('size.unit')}`}
          value={unit}
          disabled={disabled}
          onChange={(e) => onChange(amount, (e.currentTarget as HTMLSelectElement).value as SizeUnit)}
          data-testid={`${testId ?? id}-unit`}
        >
          <option value="MB">{t('size.mb')}</option>
          <option value="GB">{t('size.gb')}</option>
        </select>
      </div>
      {error && (
        <span id={`${id}-error`} class="field-error" data-testid={`${testId ?? id}-error`}>
          {error}
        </span>
      )}
    </div>
  )
}

/** Focuses the first element (in page order) of those ids that exists. */
export function focusFirst(ids: string[]): void {
  const els = ids.map((id) => document.getElementById(id)).filter((e): e is HTMLElement => e !== null)
  els.sort((a, b) => (a.compareDocumentPosition(b) & Node.DOCUMENT_POSITION_FOLLOWING ? -1 : 1))
  els[0]?.focus()
}

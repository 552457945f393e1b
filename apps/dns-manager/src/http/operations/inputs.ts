import { z } from 'zod'
import { PER_PAGE_MAX } from '../../domain/use-cases.ts'

/** An integer that may arrive as a JSON number or, from a REST path or query, as digits. */
export const zInteger = (min: number, max: number) =>
  z.preprocess(
    (v) => (typeof v === 'string' && /^-?\d{1,12}$/.test(v.trim()) ? Number(v) : v),
    z
      .number()
      .int('must be a whole number')
      .min(min, `must be at least ${min}`)
      .max(max, `must be at most ${max}`),
  )
export const zId = zInteger(1, 2_147_483_647)
export const ZPage = {
  cursor: z.string().max(20).optional(),
  per_page: zInteger(1, PER_PAGE_MAX).optional(),
}

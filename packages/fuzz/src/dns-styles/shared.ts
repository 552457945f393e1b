import fc from 'fast-check'
import type { Auth } from '../cases.ts'

export const authModes: Auth[] = ['anonymous', 'credentials']
export const sourceAddress = fc
  .tuple(fc.integer({ min: 0, max: 255 }), fc.integer({ min: 1, max: 254 }))
  .map(([a, b]) => `127.0.${a}.${b}`)
export const prefix = fc.constantFrom('', '/api/v1')

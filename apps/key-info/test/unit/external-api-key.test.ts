import { randomBytes, randomUUID } from 'node:crypto'
import { externalApiKeyProblem } from '../../src/domain/keys.ts'

describe("a partner's lookup key (OpenRouter's external.api_key): ≥ 32 characters and sufficient entropy", () => {
  it.each([
    ['32 random hex digits (128 bits)', randomBytes(16).toString('hex')],
    ['64 random hex digits', randomBytes(32).toString('hex')],
    ['32 random base64url characters', randomBytes(24).toString('base64url')],
    ['an OpenRouter-style key', `sk-or-v1-${randomBytes(32).toString('hex')}`],
    ['a random UUID', randomUUID()],
  ])('when it is %s, then it is accepted', (_name, key) => {
    expect(externalApiKeyProblem(key)).toBeUndefined()
  })

  it('when it is 31 characters, then it is too short, however random', () => {
    expect(externalApiKeyProblem(randomBytes(24).toString('base64url').slice(0, 31))).toBe(
      'must be at least 32 characters',
    )
  })

  it.each([
    ['one letter repeated', 'a'.repeat(64)],
    ['two letters alternating', 'ab'.repeat(32)],
    ['a short word repeated', 'abcd'.repeat(16)],
    ['an 8-letter run repeated (varied letters, still a pattern)', 'abcdefgh'.repeat(8)],
    ['a random 8-character block repeated', randomBytes(4).toString('hex').repeat(8)],
  ])('when it is %s, then it is too predictable', (_name, key) => {
    expect(externalApiKeyProblem(key)).toBe('is too predictable: use a random key (128 bits or more)')
  })
})

import { CI_SEED, parseSeed } from '../src/seed.ts'

describe('FUZZ_SEED', () => {
  it('when it is unset or empty, then the run uses the fixed CI seed', () => {
    expect(parseSeed(undefined)).toEqual({ seed: CI_SEED, random: false })
    expect(parseSeed('')).toEqual({ seed: CI_SEED, random: false })
  })

  it('when it is an integer, then that seed is replayed', () => {
    expect(parseSeed('42')).toEqual({ seed: 42, random: false })
    expect(parseSeed('-7')).toEqual({ seed: -7, random: false })
  })

  it('when it is "random", then a new 32-bit seed is chosen and marked random, so the run prints it', () => {
    expect(parseSeed('random', () => 123456)).toEqual({ seed: 123456, random: true })
    const seeds = new Set(Array.from({ length: 20 }, () => parseSeed('random').seed))
    expect(seeds.size).toBeGreaterThan(1)
    for (const seed of seeds) {
      expect(Number.isInteger(seed)).toBe(true)
      expect(seed).toBeGreaterThan(0)
      expect(seed).toBeLessThan(2 ** 31)
    }
  })

  it('when it is anything else, then the run stops at once, naming the value', () => {
    for (const bad of ['1.5', 'abc', '4294967296', 'Random'])
      expect(() => parseSeed(bad)).toThrow(`FUZZ_SEED must be a 32-bit integer or "random", not "${bad}"`)
  })
})

import { randomInt } from 'node:crypto'

/** The seed CI always runs: the same requests every time, a regression net. */
export const CI_SEED = 190007

export interface Seed {
  seed: number
  /** Chosen at random for this run (FUZZ_SEED=random): print it, it is the only way back. */
  random: boolean
}

/**
 * FUZZ_SEED: unset for the CI seed, an integer to repeat a run, or `random` for a search of
 * requests no earlier run sent. fast-check takes a 32-bit seed.
 */
export function parseSeed(value: string | undefined, pick = () => randomInt(1, 2 ** 31)): Seed {
  if (value === undefined || value.trim() === '') return { seed: CI_SEED, random: false }
  if (value.trim() === 'random') return { seed: pick(), random: true }
  const seed = Number(value)
  if (!Number.isInteger(seed) || seed < -(2 ** 31) || seed >= 2 ** 31)
    throw new Error(`FUZZ_SEED must be a 32-bit integer or "random", not ${JSON.stringify(value)}`)
  return { seed, random: false }
}

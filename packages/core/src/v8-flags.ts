import { setFlagsFromString } from 'node:v8'

/**
 * The V8 flags every service runs with. Those V8 reads at any time are set here at start-up:
 * this module is imported for its effect by service.ts, before any Prisma client compiles its
 * module and before the hot paths run. Those V8 reads only while it sets up the heap and its
 * compilers, before any JavaScript runs, are in COMMAND_LINE_FLAGS, and `./relaunch.ts` puts them
 * on node's command line. Either way no flag is left to forget in a Dockerfile or a launcher.
 * Each one was measured with bench/memory (BENCHMARKS.md, "Memory and start-up").
 */

/**
 * Keeps WebAssembly on V8's baseline compiler (Liftoff). The one WebAssembly module the services
 * run is Prisma 7's query compiler (3.4 MB), which turns a Prisma call into a query plan once per
 * query shape (plans are cached). With tier-up, V8 recompiles its hot functions with TurboFan on
 * background threads, and the compile zones of that left ~65 MB of malloc arenas resident for
 * good after the first query: measured on key-info, RSS 10 s after one /readyz went from 105 MB
 * to 181 MB with tier-up and to 117 MB without. The queries the services run per request skip
 * Prisma's planner (plain SQL on the pool) or hit its plan cache, so the slower baseline code
 * costs nothing measurable there. (The flag is read when a module is compiled.)
 */
setFlagsFromString('--liftoff-only')

/**
 * No allocation-site pretenuring. V8 watches how many objects of each object or array literal
 * outlive a young-generation GC, and once most of them do, allocates that literal straight into
 * the old generation. Under load a request's objects live for a Redis or Postgres round trip,
 * and at times (a scavenge landing while a group commit is in flight) a per-request literal
 * crosses the threshold: from then on every request put its objects, and the
 * command strings and buffers they point to, in the old generation, which grew ~500 bytes a
 * request until V8's first mark-compact near 100 MB. Measured on dns-manager (bench/memory,
 * 10 s of GET /rest/quota at 50 connections): old space after the load 90-95 MB and RSS 206-235
 * MB in the runs where that happened (more than half of them), against old space 27-31 MB and RSS
 * 147-156 MB in every run without pretenuring. The objects a service keeps for long (caches,
 * pools) are few, so copying them through the young generation once costs nothing measurable.
 * (Set at run time, as here, it takes effect: the runs without it were made so.)
 */
setFlagsFromString('--no-allocation-site-pretenuring')

/**
 * The flags that count only on node's command line (or in NODE_OPTIONS), for the Node releases
 * whose V8 defaults differ from Node 20's. Measured on Node 24.21 (bench/memory, 10 s at 50
 * connections, RSS right after the load; BENCHMARKS.md):
 *
 * - `--max-semi-space-size=16`: V8 13 lets the young generation grow to two 64 MB semi-spaces
 *   on a machine with this much memory (Node 20's V8 stopped at 16 MB), and under load it does:
 *   new space was 128 MB in key-info and dns-manager after their load, RSS 265-314 MB. Node 20's
 *   16 MB brought that to 180-252 MB.
 * - `--no-maglev`: Maglev, the optimizing tier Node 22 added below TurboFan, compiles hot
 *   functions a second time on background threads; with it the process kept ~60 MB more
 *   256 KB pages than its heap uses (key-info 180-193 → 153-158 MB, dns-manager 247-252 →
 *   184-185). Set at run time it is read too late: the same runs with `setFlagsFromString`
 *   stayed at 174-238 MB. The hot reads end in TurboFan code either way.
 */
export const COMMAND_LINE_FLAGS: readonly string[] = ['--max-semi-space-size=16', '--no-maglev']

/** A flag's name as V8 matches it: `--max_semi_space_size=64` and `--no-maglev` name the flags
 * `max-semi-space-size` and `maglev`. */
const flagName = (flag: string): string =>
  flag.replace(/^--?/, '').replace(/=.*$/, '').replaceAll('_', '-').replace(/^no-/, '')

/**
 * Which of COMMAND_LINE_FLAGS node was not given, from its own arguments (`process.execArgv`)
 * and NODE_OPTIONS. A flag given there in any form (`--max-semi-space-size=64`, `--maglev`) is
 * the operator's choice and is kept.
 */
export function missingCommandLineFlags(execArgv: readonly string[], nodeOptions = ''): string[] {
  const given = new Set(
    [...execArgv, ...nodeOptions.split(/\s+/)].filter((arg) => arg.startsWith('-')).map(flagName),
  )
  return COMMAND_LINE_FLAGS.filter((flag) => !given.has(flagName(flag)))
}

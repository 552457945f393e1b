import { setFlagsFromString } from 'node:v8'

/**
 * The V8 flags every service runs with, set at start-up: imported for its effect by service.ts,
 * before any Prisma client compiles its module and before the hot paths run, so no command-line
 * flag is left to forget in a Dockerfile or a launcher. Each one was measured with bench/memory
 * (BENCHMARKS.md, "Memory and start-up").
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

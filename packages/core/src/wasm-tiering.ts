import { setFlagsFromString } from 'node:v8'

/**
 * Keeps WebAssembly on V8's baseline compiler (Liftoff) in the services. The one WebAssembly
 * module they run is Prisma 7's query compiler (3.4 MB), which turns a Prisma call into a query
 * plan once per query shape (plans are cached). With tier-up, V8 recompiles its hot functions
 * with TurboFan on background threads, and the compile zones of that left ~65 MB of malloc
 * arenas resident for good after the first query: measured on key-info, RSS 10 s after one
 * /readyz went from 105 MB to 181 MB with tier-up and to 117 MB without (bench/memory). The
 * queries the services run per request skip Prisma's planner (plain SQL on the pool) or hit its
 * plan cache, so the slower baseline code costs nothing measurable there.
 *
 * Imported for its effect by service.ts, before any Prisma client compiles the module (the flag
 * is read when a module is compiled, so setting it at start-up is enough; no command-line flag to
 * forget in a Dockerfile or a launcher).
 */
setFlagsFromString('--liftoff-only')

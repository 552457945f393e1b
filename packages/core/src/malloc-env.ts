/**
 * glibc malloc settings every service runs with, put in the environment by `./relaunch.ts` when
 * it re-executes node (glibc reads them once, when the process starts; set later they do
 * nothing). Measured on dns-manager, Node 24.21 (bench/memory, 10 s of GET /rest/quota at 50
 * connections; BENCHMARKS.md, "Memory and start-up"): outside V8's heap the process grew from
 * 72 MB idle to 90 MB under load (the brk heap 15 → 22 MB, other anonymous mappings 10 → 19):
 * memory that V8's compiler zones, the HTTP parser and the Redis and Postgres clients malloc and
 * free on several threads, which glibc keeps in per-thread arenas and below the top of each heap,
 * and never gives back. With these, RSS right after the load went from 161-169 MB to 145-152 MB,
 * 10 s after it from 116 to 102-105 MB, idle from 97 to 92-94 MB.
 *
 * - `MALLOC_ARENA_MAX=2`: at most two arenas (glibc's default is 8 per core), so memory freed by
 *   one thread is reused by the next instead of sitting in an arena of its own.
 * - `MALLOC_MMAP_THRESHOLD_=131072` and `MALLOC_TRIM_THRESHOLD_=131072`: a block of 128 KiB or
 *   more is its own mapping, returned when freed, and free memory above 128 KiB at a heap's top
 *   is returned. (Set explicitly, the threshold also stops glibc from raising it to 32 MiB after
 *   the first large block is freed, which is what let large blocks stay in the heap.)
 *
 * Other C libraries (musl) ignore them. An operator's own value of any of them is kept.
 */
export const MALLOC_ENVIRONMENT: Readonly<Record<string, string>> = {
  MALLOC_ARENA_MAX: '2',
  MALLOC_MMAP_THRESHOLD_: '131072',
  MALLOC_TRIM_THRESHOLD_: '131072',
}

/** The MALLOC_ENVIRONMENT settings `env` does not set (an empty value counts as set). */
export function missingMallocSettings(env: NodeJS.ProcessEnv): Record<string, string> {
  return Object.fromEntries(Object.entries(MALLOC_ENVIRONMENT).filter(([name]) => env[name] === undefined))
}

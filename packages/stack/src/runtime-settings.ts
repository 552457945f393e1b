/**
 * How node runs a service: the same settings the image gives it (infra/docker/Dockerfile, its
 * ENV and CMD), for `pnpm start`. Each one is in BENCHMARKS.md ("Runtime settings") with what it
 * was measured to save; a test keeps this file and the Dockerfile naming the same ones.
 */

/**
 * V8 flags, on node's command line: NODE_OPTIONS accepts none of these but
 * `--max-semi-space-size`, which the image sets there.
 */
export const SERVICE_NODE_FLAGS: readonly string[] = [
  // Prisma's WebAssembly query compiler stays on V8's baseline compiler: no background
  // recompiles whose compile zones stay resident.
  '--liftoff-only',
  // Per-request literals are never allocated straight into the old generation.
  '--no-allocation-site-pretenuring',
  // Node 22+ only (Node 20's defaults already): the young generation's limit, and no Maglev tier.
  '--max-semi-space-size=16',
  '--no-maglev',
]

/** glibc malloc settings (read once at process start; other C libraries ignore them). */
export const SERVICE_ENVIRONMENT: Readonly<Record<string, string>> = {
  MALLOC_ARENA_MAX: '2',
  MALLOC_MMAP_THRESHOLD_: '131072',
  MALLOC_TRIM_THRESHOLD_: '131072',
}

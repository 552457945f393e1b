#!/usr/bin/env node
// `prisma generate` for the app in the current directory. Generation needs no schema engine, but
// Prisma still tries to download one unless PRISMA_SCHEMA_ENGINE_BINARY names an existing file;
// machines without access to Prisma's binary host (this project's CI) would fail. Point it at
// node itself when unset: generate never executes it.
import { spawnSync } from 'node:child_process'

const env = { ...process.env }
env.PRISMA_SCHEMA_ENGINE_BINARY ??= process.execPath
env.PRISMA_HIDE_UPDATE_MESSAGE = '1'
const result = spawnSync('prisma', ['generate', ...process.argv.slice(2)], {
  stdio: 'inherit',
  env,
  shell: false,
})
process.exit(result.status ?? 1)

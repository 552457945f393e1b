import { databaseOptions } from '@quartet/core/db'
import { systemClock } from '@quartet/core/clock'
import { type CliArgs, migrationCommands, runCli } from '@quartet/core/cli'
import { ApiError } from '@quartet/core/errors'
import { migrationsDirFrom } from '@quartet/core/service'
import path from 'node:path'
import { loadAppConfig } from './config.ts'
import { bundledContentDir, schemasDir } from './content-location.ts'
import { ContentValidator, contentInvalid } from './domain/content.ts'
import { activateRelease, checkContentFolder, listReleases, publishContent } from './domain/releases.ts'
import { createDb } from './store/db.ts'
import { createReleaseRepository } from './store/release-repository.ts'

const validator = () => new ContentValidator(schemasDir(bundledContentDir(__dirname)))

/** Opens the database for one command and always closes it. */
async function withRepository<T>(
  run: (repo: ReturnType<typeof createReleaseRepository>) => Promise<T>,
): Promise<T> {
  const config = loadAppConfig()
  const db = createDb(databaseOptions(config, { poolSize: 2 }))
  try {
    return await run(createReleaseRepository(db, config.DATABASE_SCHEMA))
  } finally {
    await db.$disconnect()
  }
}

const folderArg = (args: CliArgs): string => {
  const dir = args.positional[0]
  if (!dir) throw new ApiError('bad_request', 'give the content folder: content:publish <dir>')
  return path.resolve(dir)
}

void runCli('design-archive', {
  ...migrationCommands(loadAppConfig, migrationsDirFrom(__dirname)),
  'content:validate': {
    describe:
      'check a content folder (schemas and cross-references) without publishing: content:validate <dir>',
    run: async (args) => {
      const { problems } = checkContentFolder(validator(), folderArg(args))
      if (problems.length) throw contentInvalid(problems)
      return { valid: true }
    },
  },
  'content:publish': {
    describe:
      'validate a content folder and store it as one release, active unless --inactive: content:publish <dir> [--version <v>] [--inactive]',
    run: async (args) => {
      const version = args.flags.version
      if (version === true) throw new ApiError('bad_request', '--version needs a value')
      return withRepository((releases) =>
        publishContent(
          { releases, validator: validator(), clock: systemClock },
          { dir: folderArg(args), version, activate: args.flags.inactive !== true },
        ),
      )
    },
  },
  'content:list': {
    describe: 'list releases, newest first, with the active one marked',
    run: () => withRepository(async (releases) => ({ releases: await listReleases(releases) })),
  },
  'content:activate': {
    describe: 'make a release the active one (also how to roll back): content:activate <version>',
    run: async (args) => {
      const version = args.positional[0]
      if (!version) throw new ApiError('bad_request', 'give the release version: content:activate <version>')
      return withRepository((releases) => activateRelease(releases, version))
    },
  },
}).then((code) => {
  process.exitCode = code
})

import { migrationCommands, runCli } from '@quartet/core/cli'
import { migrationsDirFrom } from '@quartet/core/service'
import { loadAppConfig } from './config.ts'

const target = () => {
  const config = loadAppConfig()
  return {
    connectionString: config.DATABASE_URL,
    schema: config.DATABASE_SCHEMA,
    migrationsDir: migrationsDirFrom(__dirname),
  }
}

void runCli('design-archive', { ...migrationCommands(target) }).then((code) => {
  process.exitCode = code
})

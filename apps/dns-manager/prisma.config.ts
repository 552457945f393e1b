// Used by the prisma CLI (generate; migrate where Prisma's engines are available). At run time
// the app connects through @prisma/adapter-pg with the schema from its config.
import { defineConfig } from 'prisma/config'

export default defineConfig({
  schema: 'prisma/schema.prisma',
  migrations: { path: 'prisma/migrations' },
})

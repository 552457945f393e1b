import type { CredentialRow, CredentialScope, CredentialStore } from '../domain/ports.ts'
import type { Db } from './db.ts'
import { Abort, inTransaction, lockAccount, lockSubdomain } from './transactions.ts'

const toCredential = (row: Omit<CredentialRow, 'scope'> & { scope: string }): CredentialRow => ({
  ...row,
  scope: row.scope as CredentialScope,
})

export function createCredentialRepository(db: Db, schema: string): CredentialStore {
  return {
    listCredentials: async (accountId) =>
      (await db.apiCredential.findMany({ where: { accountId }, orderBy: { createdAt: 'asc' } })).map(
        toCredential,
      ),
    /** The account row lock makes the limit exact. */
    async addCredentialWithinLimit(accountId, credential, max) {
      const r = await inTransaction<CredentialRow, 'limit'>(db, async (tx) => {
        await lockAccount(tx, schema, accountId)
        if ((await tx.apiCredential.count({ where: { accountId, scope: 'full' } })) >= max)
          throw new Abort('limit')
        return toCredential(await tx.apiCredential.create({ data: { accountId, ...credential } }))
      })
      return r.value
    },
    /** The subdomain's (account-wide: the account's) row lock makes the limit exact. */
    async addScopedCredential(accountId, scope, subdomainId, credential, max) {
      const r = await inTransaction<CredentialRow | null, 'limit'>(db, async (tx) => {
        const locked =
          subdomainId === null
            ? await lockAccount(tx, schema, accountId)
            : await lockSubdomain(tx, schema, accountId, subdomainId)
        if (!locked) return null
        if ((await tx.apiCredential.count({ where: { accountId, scope, subdomainId } })) >= max)
          throw new Abort('limit')
        return toCredential(
          await tx.apiCredential.create({ data: { accountId, scope, subdomainId, ...credential } }),
        )
      })
      return r.value
    },
    async deleteCredential(accountId, id) {
      return (await db.apiCredential.deleteMany({ where: { accountId, id } })).count === 1
    },
    async replaceCredentialSecret(accountId, id, secretHash) {
      const n = await db.apiCredential.updateMany({ where: { accountId, id }, data: { secretHash } })
      const row = n.count ? await db.apiCredential.findUnique({ where: { id } }) : null
      return row && toCredential(row)
    },
  }
}

import type { CredentialRow, CredentialStore } from '../domain/ports.ts'
import type { Db } from './db.ts'
import { Abort, inTransaction, lockAccount } from './transactions.ts'

export function createCredentialRepository(db: Db, schema: string): CredentialStore {
  return {
    listCredentials: (accountId) =>
      db.apiCredential.findMany({ where: { accountId }, orderBy: { createdAt: 'asc' } }),
    /** The account row lock makes the limit exact. */
    async addCredentialWithinLimit(accountId, credential, max) {
      const r = await inTransaction<CredentialRow, 'limit'>(db, async (tx) => {
        await lockAccount(tx, schema, accountId)
        if ((await tx.apiCredential.count({ where: { accountId } })) >= max) throw new Abort('limit')
        return tx.apiCredential.create({ data: { accountId, ...credential } })
      })
      return r.value
    },
    async deleteCredential(accountId, id) {
      return (await db.apiCredential.deleteMany({ where: { accountId, id } })).count === 1
    },
    async replaceCredentialSecret(accountId, id, secretHash) {
      const n = await db.apiCredential.updateMany({ where: { accountId, id }, data: { secretHash } })
      return n.count ? db.apiCredential.findUnique({ where: { id } }) : null
    },
  }
}

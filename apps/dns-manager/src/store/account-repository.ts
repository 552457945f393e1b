import { preparedStatement, quoteIdent } from '@quartet/core/db'
import type { AccountRow, AccountStore, CredentialRow } from '../domain/ports.ts'
import { type Db, rawOf } from './db.ts'
import { accountSelect } from './transactions.ts'

export function createAccountRepository(db: Db, schema: string): AccountStore {
  const { pool } = rawOf(db)
  // The two statements of the reads clients poll, prepared once per connection.
  const count = preparedStatement<{ n: number }>(
    pool,
    'dns_manager_count_subdomains',
    `SELECT count(*)::int AS n FROM ${quoteIdent(schema)}."subdomain" WHERE account_id = $1::uuid`,
  )
  const credential = preparedStatement<
    Omit<CredentialRow, 'accountId'> & { account_id: string } & Omit<AccountRow, 'id'>
  >(
    pool,
    'dns_manager_credential',
    `SELECT c.id, c.account_id, c.public_key AS "publicKey", c.secret_hash AS "secretHash",
                c.created_at AS "createdAt", c.last_used_at AS "lastUsedAt", c.scope,
                c.subdomain_id AS "subdomainId", a.email,
                a.balance_cents AS "balanceCents", a.quota_total AS "quotaTotal",
                a.api_access_enabled AS "apiAccessEnabled", a.ip_allow_list AS "ipAllowList"
           FROM ${quoteIdent(schema)}."api_credential" c
           JOIN ${quoteIdent(schema)}."account" a ON a.id = c.account_id
          WHERE c.public_key = $1`,
  )
  return {
    async findCredential(publicKey) {
      // Every request without a cached principal runs this: one round trip (a join) on the pool.
      const r = (await credential([publicKey]))[0]
      if (!r) return null
      return {
        credential: {
          id: r.id,
          accountId: r.account_id,
          publicKey: r.publicKey,
          secretHash: r.secretHash,
          createdAt: r.createdAt,
          lastUsedAt: r.lastUsedAt,
          scope: r.scope,
          subdomainId: r.subdomainId,
        },
        account: {
          id: r.account_id,
          email: r.email,
          balanceCents: r.balanceCents,
          quotaTotal: r.quotaTotal,
          apiAccessEnabled: r.apiAccessEnabled,
          ipAllowList: r.ipAllowList ?? [],
        },
      }
    },
    async touchCredential(id, now) {
      await db.apiCredential.updateMany({
        where: { id, OR: [{ lastUsedAt: null }, { lastUsedAt: { lt: new Date(now.getTime() - 60_000) } }] },
        data: { lastUsedAt: now },
      })
    },
    async createAccount(input) {
      const { credential, ...data } = input
      return db.account.create({
        data: { ...data, credentials: { create: credential } },
        select: accountSelect,
      })
    },
    async updateAccount(id, data) {
      const n = await db.account.updateMany({ where: { id }, data })
      return n.count ? db.account.findUnique({ where: { id }, select: accountSelect }) : null
    },
    async creditBalance(id, cents) {
      const n = await db.account.updateMany({ where: { id }, data: { balanceCents: { increment: cents } } })
      return n.count ? db.account.findUnique({ where: { id }, select: accountSelect }) : null
    },
    getAccount: (id) => db.account.findUnique({ where: { id }, select: accountSelect }),
    /** On every quota read (auth.verify, quota.get): plain SQL on the pool. */
    async countSubdomains(accountId) {
      return (await count([accountId]))[0]?.n ?? 0
    },
  }
}

import { quoteIdent } from '@quartet/core/db'
import type { PeopleStore, WebSessionStore, WebTokenKind, WebTokenRow } from '../domain/ports.ts'
import { Prisma } from '../generated/prisma/client.ts'
import type { Db } from './db.ts'
import { Abort, accountSelect, inTransaction, type Tx } from './transactions.ts'

const tokenSelect = { kind: true, email: true, accountId: true, inviteHash: true, expiresAt: true } as const
const toToken = (r: { kind: string } & Omit<WebTokenRow, 'kind'>): WebTokenRow => ({
  ...r,
  kind: r.kind as WebTokenKind,
})

/**
 * Spends a token: the one UPDATE … WHERE used_at IS NULL that can succeed for it, so two
 * concurrent uses cannot both get it. Returns the token, or null when it was not usable.
 */
async function spendToken(
  tx: Tx,
  schema: string,
  tokenHash: string,
  kind: WebTokenKind,
  now: Date,
): Promise<WebTokenRow | null> {
  const rows = await tx.$queryRawUnsafe<Array<Omit<WebTokenRow, 'kind'> & { kind: string }>>(
    `UPDATE ${quoteIdent(schema)}."web_token" SET used_at = $3
      WHERE token_hash = $1 AND kind = $2 AND used_at IS NULL AND expires_at > $3
      RETURNING kind, email, account_id AS "accountId", invite_hash AS "inviteHash", expires_at AS "expiresAt"`,
    tokenHash,
    kind,
    now,
  )
  return rows[0] ? toToken(rows[0]) : null
}

/** The back office's people: passwords, single-use links (PeopleStore) and sessions (WebSessionStore). */
export function createPeopleRepository(db: Db, schema: string): PeopleStore & WebSessionStore {
  return {
    async findLogin(email) {
      const row = await db.account.findUnique({
        where: { email: email.toLowerCase() },
        select: { ...accountSelect, login: { select: { passwordHash: true } } },
      })
      if (!row) return null
      const { login, ...account } = row
      return { account, passwordHash: login?.passwordHash ?? null }
    },
    async passwordHashOf(accountId) {
      const row = await db.accountLogin.findUnique({ where: { accountId }, select: { passwordHash: true } })
      return row?.passwordHash ?? null
    },
    async setPassword(accountId, passwordHash, now) {
      await db.$transaction([
        db.accountLogin.upsert({
          where: { accountId },
          create: { accountId, passwordHash, changedAt: now },
          update: { passwordHash, changedAt: now },
        }),
        db.webSession.deleteMany({ where: { accountId } }),
      ])
    },
    async createToken(tokenHash, token) {
      await db.webToken.create({ data: { tokenHash, ...token } })
    },
    async peekToken(tokenHash, kind, now) {
      const row = await db.webToken.findFirst({
        where: { tokenHash, kind, usedAt: null, expiresAt: { gt: now } },
        select: tokenSelect,
      })
      return row ? toToken(row) : null
    },
    async completeSignup({ tokenHash, now, passwordHash, quotaTotal, balanceCents }) {
      const result = await inTransaction<
        Awaited<ReturnType<PeopleStore['completeSignup']>>,
        'invalid' | 'taken'
      >(db, async (tx) => {
        const token = await spendToken(tx, schema, tokenHash, 'signup', now)
        if (!token?.email) throw new Abort('invalid')
        if (token.inviteHash && !(await spendToken(tx, schema, token.inviteHash, 'invite', now)))
          throw new Abort('invalid')
        try {
          return await tx.account.create({
            data: {
              email: token.email,
              quotaTotal,
              balanceCents,
              login: { create: { passwordHash, changedAt: now } },
            },
            select: accountSelect,
          })
        } catch (err) {
          if (err instanceof Prisma.PrismaClientKnownRequestError && err.code === 'P2002')
            throw new Abort('taken')
          throw err
        }
      })
      return result.value
    },
    async completeReset(tokenHash, now, passwordHash) {
      const result = await inTransaction<string, null>(db, async (tx) => {
        const token = await spendToken(tx, schema, tokenHash, 'reset', now)
        if (!token?.accountId) throw new Abort(null)
        const accountId = token.accountId
        await tx.accountLogin.upsert({
          where: { accountId },
          create: { accountId, passwordHash, changedAt: now },
          update: { passwordHash, changedAt: now },
        })
        await tx.webSession.deleteMany({ where: { accountId } })
        return accountId
      })
      return result.value
    },

    async createSession({ idHash, accountId, ip, now, expiresAt }) {
      await db.webSession.create({
        data: { idHash, accountId, ip, createdAt: now, lastSeenAt: now, expiresAt },
      })
    },
    async resumeSession(idHash, now, idleMs) {
      // One statement: only a live session is touched and returned (idle and absolute limits).
      const rows = await db.$queryRawUnsafe<Array<{ account_id: string; created_at: Date }>>(
        `UPDATE ${quoteIdent(schema)}."web_session" SET last_seen_at = $2
          WHERE id_hash = $1 AND expires_at > $2 AND last_seen_at > $3
          RETURNING account_id, created_at`,
        idHash,
        now,
        new Date(now.getTime() - idleMs),
      )
      const row = rows[0]
      if (!row) return null
      const account = await db.account.findUnique({ where: { id: row.account_id }, select: accountSelect })
      return account ? { accountId: row.account_id, createdAt: row.created_at, account } : null
    },
    async deleteSession(idHash) {
      await db.webSession.deleteMany({ where: { idHash } })
    },
  }
}

import path from 'node:path'
import { expectOperationalEndpoints } from '@quartet/core/testing'
import { schemaDrift } from '@quartet/core/testing/schema-drift'
import { buildApp, useDeps } from '../helpers.ts'

const deps = useDeps()
const app = () => buildApp(deps).app

describe('dns-manager skeleton', () => {
  it('when migrated, then the tables match schema.prisma column for column', async () => {
    const schemaPrismaPath = path.join(__dirname, '../../prisma/schema.prisma')
    expect(
      await schemaDrift({ schemaPrismaPath, url: deps.database.url, schema: deps.database.schema }),
    ).toEqual([])
  })

  it('when the schema is migrated, then every model round-trips through the generated client', async () => {
    const created = await deps.db.account.create({
      data: {
        email: 'owner@example.test',
        balanceCents: 500,
        ipAllowList: ['192.0.2.0/24', '2001:db8::/32'],
      },
    })
    const read = await deps.db.account.findUniqueOrThrow({ where: { id: created.id } })
    expect(read).toEqual(created)
    expect(read).toMatchObject({
      quotaTotal: 5,
      apiAccessEnabled: true,
      ipAllowList: ['192.0.2.0/24', '2001:db8::/32'],
    })
  })

  it('when the dns models are written, then each reads back equal', async () => {
    const account = await deps.db.account.create({ data: { email: 'models@example.test' } })
    const credential = await deps.db.apiCredential.create({
      data: { accountId: account.id, publicKey: 'dnsm_model', secretHash: 'h'.repeat(64) },
    })
    const zone = await deps.db.rootZone.create({
      data: { name: 'models.test', priceCents: 100, termYears: 2 },
    })
    const subdomain = await deps.db.subdomain.create({
      data: {
        accountId: account.id,
        rootZoneId: zone.id,
        label: 'm',
        fullDomain: 'm.models.test',
        expiresAt: new Date(),
      },
    })
    const record = await deps.db.dnsRecord.create({
      data: {
        subdomainId: subdomain.id,
        name: '_sip._tcp',
        type: 'SRV',
        content: 'sip.example.com',
        priority: 1,
        weight: 2,
        port: 3,
        state: 'pending_update',
        previous: { name: '@' },
        pendingSince: new Date(),
      },
    })
    const audit = await deps.db.auditLog.create({
      data: {
        accountId: account.id,
        credentialId: credential.id,
        ip: '::1',
        operation: 'x',
        target: 't',
        outcome: 'ok',
      },
    })
    expect(await deps.db.apiCredential.findUniqueOrThrow({ where: { id: credential.id } })).toEqual(
      credential,
    )
    expect(await deps.db.rootZone.findUniqueOrThrow({ where: { id: zone.id } })).toEqual(zone)
    expect(await deps.db.subdomain.findUniqueOrThrow({ where: { id: subdomain.id } })).toEqual(subdomain)
    expect(await deps.db.dnsRecord.findUniqueOrThrow({ where: { id: record.id } })).toEqual(record)
    expect(await deps.db.auditLog.findUniqueOrThrow({ where: { id: audit.id } })).toEqual(audit)
  })

  it('when a balance would go negative, then the database refuses it', async () => {
    const account = await deps.db.account.create({ data: { email: 'poor@example.test', balanceCents: 100 } })
    await expect(
      deps.db.account.update({ where: { id: account.id }, data: { balanceCents: { decrement: 101 } } }),
    ).rejects.toThrow(/account_balance_not_negative/)
  })

  it('when probed, then health, readiness, metrics and the JSON 404 answer in the REST envelope', async () => {
    await expectOperationalEndpoints(app(), {
      checks: ['database', 'kv'],
      notFoundBody: (id) => ({
        success: false,
        error: { code: 'not_found', message: 'no route for GET /no/such/route' },
        request_id: id,
      }),
    })
  })

  it('when the back-office models are written, then each reads back equal', async () => {
    const account = await deps.db.account.create({ data: { email: 'people-models@example.test' } })
    const now = new Date('2026-11-24T10:00:00.000Z')
    const login = await deps.db.accountLogin.create({
      data: { accountId: account.id, passwordHash: 'scrypt$x', changedAt: now },
    })
    expect(await deps.db.accountLogin.findUniqueOrThrow({ where: { accountId: account.id } })).toEqual(login)
    const session = await deps.db.webSession.create({
      data: { idHash: 'h'.repeat(64), accountId: account.id, ip: '2001:db8::1', expiresAt: now },
    })
    expect(await deps.db.webSession.findUniqueOrThrow({ where: { idHash: session.idHash } })).toEqual(session)
    const token = await deps.db.webToken.create({
      data: {
        tokenHash: 't'.repeat(64),
        kind: 'signup',
        email: 'p@example.test',
        inviteHash: 'i'.repeat(64),
        expiresAt: now,
      },
    })
    expect(await deps.db.webToken.findUniqueOrThrow({ where: { tokenHash: token.tokenHash } })).toEqual(token)
    const entry = await deps.db.auditLog.create({
      data: { accountId: account.id, operation: 'web.signin', outcome: 'ok', via: 'web' },
    })
    expect(await deps.db.auditLog.findUniqueOrThrow({ where: { id: entry.id } })).toEqual(entry)
    await expect(
      deps.db.webToken.create({ data: { tokenHash: 'u'.repeat(64), kind: 'other', expiresAt: now } }),
    ).rejects.toThrow(/web_token_kind_known/)
  })
})

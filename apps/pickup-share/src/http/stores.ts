import { type OperationContext, reply } from '@quartet/core/operation'
import { z } from 'zod'
import { PROBE_REASONS } from '../domain/connection-tests.ts'
import type { InstanceView } from '../domain/storage-instances.ts'
import type { StoreKind } from '../domain/storage.ts'
import type { AdminSession } from '../domain/admin-sessions.ts'
import { auditOf } from './admin.ts'
import { adminSession } from './auth.ts'
import { define, expressOf, type Services } from './services.ts'
import { ZStoreKind } from './upload.ts'

const ZInstanceName = z
  .string()
  .regex(/^[a-z0-9][a-z0-9._-]{0,62}$/, 'must be 1-63 characters of a-z, 0-9, ".", "_", "-"')

export const ZUpsertStore = z
  .object({
    name: ZInstanceName,
    /** Required when creating; must match when changing. */
    kind: ZStoreKind.optional(),
    /** Connection settings (see README); credentials (token, accessKey, secretKey) are write-only. */
    settings: z.record(z.string(), z.unknown()).optional(),
    /** null = no quota. */
    quotaBytes: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).nullable().optional(),
    enabled: z.boolean().optional(),
  })
  .strict()

export const ZDeleteStore = z.object({ name: ZInstanceName, force: z.boolean().default(false) }).strict()

export const ZStoreView = z.object({
  id: z.string(),
  kind: ZStoreKind,
  name: z.string(),
  settings: z.record(z.string(), z.unknown()),
  credentialsSet: z.array(z.string()),
  quotaBytes: z.number().int().nullable(),
  usedBytes: z.number().int(),
  reservedBytes: z.number().int(),
  freeBytes: z.number().int().nullable(),
  enabled: z.boolean(),
  builtin: z.boolean(),
  available: z.boolean(),
  createdAt: z.string(),
  updatedAt: z.string(),
})

export const ZTestStore = z
  .object({
    /** An existing instance (its stored credentials fill those left out of settings). */
    name: ZInstanceName.optional(),
    /** Required for a new instance. */
    kind: ZStoreKind.optional(),
    settings: z.record(z.string(), z.unknown()).optional(),
  })
  .strict()
  .refine((b) => b.name !== undefined || b.kind !== undefined, {
    message: 'name (an existing instance) or kind (a new one) is required',
    path: ['kind'],
  })

export const ZConnectionTest = z.object({
  ok: z.boolean(),
  step: z.enum(['settings', 'connect', 'write', 'read', 'delete']).optional(),
  message: z.string().optional(),
  reason: z.enum(PROBE_REASONS).optional(),
  note: z.string().optional(),
  noteCode: z.enum(['branch_missing']).optional(),
  ms: z.number().int(),
})

export const presentStore = (v: InstanceView) => ({
  ...v,
  kind: v.kind as StoreKind,
  createdAt: v.createdAt.toISOString(),
  updatedAt: v.updatedAt.toISOString(),
})

export const ZStoreList = z.object({ items: z.array(ZStoreView) })
export const ZStoreDeleted = z.object({
  deleted: z.literal(true),
  name: z.string(),
  deletedShares: z.number().int(),
})

/** An admin's change to a store, audited with the session's label (credentials never logged). */
const auditStore = (
  ctx: OperationContext<AdminSession, Services>,
  action: string,
  target: string,
  details: Record<string, unknown>,
) => auditOf(ctx.deps, expressOf(ctx).req, ctx.caller)(action, target, details)

const admin = { tags: ['admin'], auth: adminSession }

export const listStoresOperation = define({
  ...admin,
  name: 'listStores',
  summary: 'Storage instances with quota, used and reserved bytes (credentials never returned)',
  route: { method: 'get', path: '/api/admin/stores' },
  input: {},
  responses: { 200: { description: 'instances', schema: ZStoreList } },
  errors: {},
  async handler(_input, { deps }) {
    return reply(200, { items: (await deps.instances.list()).map(presentStore) })
  },
})

export const upsertStoreOperation = define({
  ...admin,
  name: 'upsertStore',
  summary: 'Create a storage instance, or change one by name (quota, enabled, settings)',
  route: { method: 'post', path: '/api/admin/stores' },
  input: { body: ZUpsertStore },
  responses: {
    200: { description: 'changed', schema: ZStoreView },
    201: { description: 'created', schema: ZStoreView },
  },
  errors: {
    bad_request: 'invalid settings; nothing saved',
    store_builtin: 'settings of a built-in instance',
    store_exists: 'a store of another kind has the name',
  },
  async handler({ body }, ctx) {
    const { created, instance } = await ctx.deps.instances.upsert(body)
    // Only the names of the settings are logged: credentials never reach the audit log.
    await auditStore(ctx, created ? 'store.create' : 'store.update', body.name, {
      kind: instance.kind,
      settings: Object.keys(body.settings ?? {}).sort(),
      quotaBytes: body.quotaBytes,
      enabled: body.enabled,
    })
    return created ? reply(201, presentStore(instance)) : reply(200, presentStore(instance))
  },
})

// Changes nothing, so not audited; answers 200 either way (the test ran), ok false with the step that failed.
export const testStoreOperation = define({
  ...admin,
  name: 'testStore',
  summary:
    'Test a storage connection without saving (blob, bucket: a probe object written, read back, deleted; repo: git ls-remote)',
  route: { method: 'post', path: '/api/admin/stores/test' },
  input: { body: ZTestStore },
  responses: {
    200: { description: 'the outcome: ok, or the failed step and why', schema: ZConnectionTest },
  },
  errors: {
    bad_request: 'invalid settings, or neither name nor kind',
    store_not_found: 'no instance with that name (and no kind given)',
    store_builtin: 'settings given for a built-in instance',
  },
  async handler({ body }, { deps }) {
    return reply(200, await deps.connectionTests.testConnection(body))
  },
})

export const deleteStoreOperation = define({
  ...admin,
  name: 'deleteStore',
  summary: 'Delete a storage instance (force: delete the shares holding files there first)',
  route: { method: 'delete', path: '/api/admin/stores' },
  input: { body: ZDeleteStore },
  responses: { 200: { description: 'deleted', schema: ZStoreDeleted } },
  errors: {
    store_not_found: 'no such instance',
    store_in_use: 'live shares hold files there',
    store_builtin: 'a built-in instance',
  },
  async handler({ body }, ctx) {
    const { deletedShares } = await ctx.deps.instances.delete(body.name, body.force)
    await auditStore(ctx, 'store.delete', body.name, { force: body.force, deletedShares })
    return reply(200, { deleted: true as const, name: body.name, deletedShares })
  },
})

/** The storage-instance admin operations: the admin's session and the CSRF guard apply. */
export const storeOperations = [
  listStoresOperation,
  upsertStoreOperation,
  testStoreOperation,
  deleteStoreOperation,
] as const

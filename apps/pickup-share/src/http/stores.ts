import { adminOperation } from './admin.ts'
import type { Express, Request, Response } from 'express'
import type { OperationDoc } from '@quartet/core/openapi'
import { inputOf, validate } from '@quartet/core/validate'
import { z } from 'zod'
import { PROBE_REASONS } from '../domain/connection-tests.ts'
import type { InstanceView } from '../domain/storage-instances.ts'
import { clientIp, type Services } from './services.ts'
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

const testSchemas = { body: ZTestStore }
const upsertSchemas = { body: ZUpsertStore }
const deleteSchemas = { body: ZDeleteStore }

export const storeOperations: OperationDoc[] = [
  adminOperation({
    method: 'get',
    path: '/api/admin/stores',
    operationId: 'listStores',
    summary: 'Storage instances with quota, used and reserved bytes (credentials never returned)',
    responses: { 200: { description: 'instances', schema: z.object({ items: z.array(ZStoreView) }) } },
  }),
  adminOperation({
    method: 'post',
    path: '/api/admin/stores',
    operationId: 'upsertStore',
    summary: 'Create a storage instance, or change one by name (quota, enabled, settings)',
    request: upsertSchemas,
    responses: {
      200: { description: 'changed', schema: ZStoreView },
      201: { description: 'created', schema: ZStoreView },
      400: { description: 'invalid settings; nothing saved' },
      409: { description: 'settings of a built-in instance' },
    },
  }),
  adminOperation({
    method: 'post',
    path: '/api/admin/stores/test',
    operationId: 'testStore',
    summary:
      'Test a storage connection without saving (blob, bucket: a probe object written, read back, deleted; repo: git ls-remote)',
    request: testSchemas,
    responses: {
      200: { description: 'the outcome: ok, or the failed step and why', schema: ZConnectionTest },
      400: { description: 'invalid settings, or neither name nor kind' },
      404: { description: 'no instance with that name (and no kind given)' },
      409: { description: 'settings given for a built-in instance' },
    },
  }),
  adminOperation({
    method: 'delete',
    path: '/api/admin/stores',
    operationId: 'deleteStore',
    summary: 'Delete a storage instance (force: delete the shares holding files there first)',
    request: deleteSchemas,
    responses: {
      200: { description: 'deleted' },
      404: { description: 'no such instance' },
      409: { description: 'live shares hold files there (store_in_use), or a built-in instance' },
    },
  }),
]

export const presentStore = (v: InstanceView) => ({
  ...v,
  createdAt: v.createdAt.toISOString(),
  updatedAt: v.updatedAt.toISOString(),
})

/** Registered after the admin routes: the CSRF guard and the session check already apply. */
export function registerStores(app: Express, s: Services): void {
  const audit = (req: Request, res: Response, action: string, target: string, details: object) =>
    s.audit.append({
      actor: `admin:${(res.locals.adminSession as { label: string }).label}`,
      action,
      target,
      ip: clientIp(req),
      details: details as Record<string, unknown>,
    })

  app.get('/api/admin/stores', async (_req, res) => {
    res.json({ items: (await s.instances.list()).map(presentStore) })
  })

  app.post('/api/admin/stores', validate(upsertSchemas), async (req, res) => {
    const { body } = inputOf(upsertSchemas, req)
    const { created, instance } = await s.instances.upsert(body)
    // Only the names of the settings are logged: credentials never reach the audit log.
    await audit(req, res, created ? 'store.create' : 'store.update', body.name, {
      kind: instance.kind,
      settings: Object.keys(body.settings ?? {}).sort(),
      quotaBytes: body.quotaBytes,
      enabled: body.enabled,
    })
    res.status(created ? 201 : 200).json(presentStore(instance))
  })

  // Changes nothing, so not audited; answers 200 either way (the test ran), ok false with the step that failed.
  app.post('/api/admin/stores/test', validate(testSchemas), async (req, res) => {
    const { body } = inputOf(testSchemas, req)
    res.json(await s.connectionTests.testConnection(body))
  })

  app.delete('/api/admin/stores', validate(deleteSchemas), async (req, res) => {
    const { body } = inputOf(deleteSchemas, req)
    const { deletedShares } = await s.instances.delete(body.name, body.force)
    await audit(req, res, 'store.delete', body.name, { force: body.force, deletedShares })
    res.json({ deleted: true, name: body.name, deletedShares })
  })
}

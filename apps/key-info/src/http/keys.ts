import type { OperationDoc } from '@quartet/core/openapi'
import { inputOf, validate } from '@quartet/core/validate'
import type { Express } from 'express'
import { z } from 'zod'
import {
  createWorkspaceKey,
  deleteKey,
  externalApiKeyProblem,
  getKey,
  listKeys,
  updateKey,
} from '../domain/keys.ts'
import { usdToMicros } from '../domain/money.ts'
import type { KeyPatch } from '../domain/ports.ts'
import { callerOf, managementKey, noStore } from './auth.ts'
import type { RouteDeps } from './deps.ts'
import {
  spendShape,
  ZDataRegions,
  ZError,
  ZKeyHash,
  ZLimitReset,
  ZUsd,
  ZUserId,
  ZUtcTimestamp,
  ZWorkspaceId,
} from './schemas.ts'

// --- contract -----------------------------------------------------------------------------------

export const ZManagedKey = z
  .object({
    hash: ZKeyHash.describe('SHA-256 hex of the key: its public identifier'),
    name: z.string(),
    label: z.string(),
    disabled: z.boolean(),
    ...spendShape,
    is_management_key: z.boolean(),
    is_free_tier: z.boolean(),
    allowed_data_regions: ZDataRegions,
    free_model_daily_limit: z.number().int().nullable(),
    created_at: z.string(),
    updated_at: z.string(),
    expires_at: z.string().nullable(),
    creator_user_id: z.string(),
    external_user: z
      .string()
      .nullable()
      .describe(
        "OpenRouter's external.user: the partner's end-user the key is attributed to; null when none",
      ),
    workspace_id: z.string(),
  })
  .strict()
export type TManagedKey = z.infer<typeof ZManagedKey>

const ZBoolString = z.enum(['true', 'false']).transform((v) => v === 'true')
const ZIntString = (min: number, max: number) =>
  z
    .string()
    .regex(/^\d+$/, 'must be a whole number')
    .transform(Number)
    .pipe(z.number().int().min(min).max(max))

export const ZListKeysQuery = z
  .object({
    offset: ZIntString(0, 1_000_000).default(0),
    limit: ZIntString(1, 500).default(100),
    include_disabled: ZBoolString.default(false),
    workspace_id: ZWorkspaceId.optional().describe(
      "only the caller's own workspace (the default) is reachable",
    ),
  })
  .strict()

export const ZCreateKey = z
  .object({
    name: z.string().trim().min(1, 'must not be empty').max(200),
    limit: ZUsd.nullable().optional(),
    limit_reset: ZLimitReset.nullable().optional(),
    include_byok_in_limit: z.boolean().optional(),
    expires_at: ZUtcTimestamp.nullable().optional(),
    is_management_key: z.boolean().optional(),
    is_free_tier: z.boolean().optional(),
    allowed_data_regions: ZDataRegions.optional(),
    free_model_daily_limit: z.number().int().min(0).max(100_000_000).nullable().optional(),
    workspace_id: ZWorkspaceId.optional().describe(
      "only the caller's own workspace (the default) is reachable",
    ),
    creator_user_id: ZUserId.nullable()
      .optional()
      .describe("the member the key is attributed to; default (and null): the caller's creator_user_id"),
    external: z
      .object({
        user: ZUserId.describe("the partner's end-user identifier, for attribution"),
        api_key: z
          .string()
          .superRefine((key, ctx) => {
            const problem = externalApiKeyProblem(key)
            if (problem) ctx.addIssue({ code: 'custom', message: problem })
          })
          .optional()
          .describe(
            "the partner's lookup key for this key (≥ 32 random characters): kept as SHA-256, never returned",
          ),
      })
      .strict()
      .optional()
      .describe('a partner-defined identity of the key (OpenRouter): external.user becomes external_user'),
  })
  .strict()
export type TCreateKey = z.infer<typeof ZCreateKey>

export const ZUpdateKey = z
  .object({
    name: z.string().trim().min(1, 'must not be empty').max(200).optional(),
    disabled: z.boolean().optional(),
    limit: ZUsd.nullable().optional(),
    limit_reset: ZLimitReset.nullable().optional(),
    include_byok_in_limit: z.boolean().optional(),
    expires_at: ZUtcTimestamp.nullable().optional(),
    allowed_data_regions: ZDataRegions.optional(),
  })
  .strict()
  .refine((o) => Object.keys(o).length > 0, 'must change at least one field')
export type TUpdateKey = z.infer<typeof ZUpdateKey>

export const ZKeyParams = z.object({ hash: ZKeyHash }).strict()

export const ZKeyList = z.object({ data: z.array(ZManagedKey) }).strict()
export const ZKeyItem = z.object({ data: ZManagedKey }).strict()
export const ZCreatedKey = z
  .object({ data: ZManagedKey, key: z.string().describe('the plaintext key: shown in this response only') })
  .strict()
export const ZDeleted = z.object({ deleted: z.literal(true) }).strict()

const micros = (usd: number | null | undefined) =>
  usd === undefined ? undefined : usd === null ? null : usdToMicros(usd)!
const date = (iso: string | null | undefined) =>
  iso === undefined ? undefined : iso === null ? null : new Date(iso)

// --- routes -------------------------------------------------------------------------------------

const list = { query: ZListKeysQuery }
const create = { body: ZCreateKey }
const one = { params: ZKeyParams }
const patch = { params: ZKeyParams, body: ZUpdateKey }

export function registerKeysRoutes(app: Express, deps: RouteDeps): void {
  const auth = managementKey(deps.limiter, deps.keys)

  app.get('/api/v1/keys', noStore, auth, validate(list), async (req, res) => {
    const { query } = inputOf(list, req)
    const data: TManagedKey[] = await listKeys(deps.keys, callerOf(res), {
      offset: query.offset,
      limit: query.limit,
      includeDisabled: query.include_disabled,
      workspaceId: query.workspace_id,
    })
    res.json({ data })
  })

  app.post('/api/v1/keys', noStore, auth, validate(create), async (req, res) => {
    const { body } = inputOf(create, req)
    const created = await createWorkspaceKey(
      deps.keys,
      callerOf(res),
      {
        name: body.name,
        limitMicros: micros(body.limit) ?? null,
        limitReset: body.limit_reset ?? null,
        includeByokInLimit: body.include_byok_in_limit ?? false,
        expiresAt: date(body.expires_at) ?? null,
        isManagementKey: body.is_management_key ?? false,
        isFreeTier: body.is_free_tier ?? false,
        allowedDataRegions: body.allowed_data_regions ?? ['global'],
        freeModelDailyLimit: body.free_model_daily_limit ?? null,
        externalUser: body.external?.user ?? null,
        externalApiKey: body.external?.api_key ?? null,
      },
      { workspaceId: body.workspace_id, creatorUserId: body.creator_user_id },
    )
    res.status(201).json({ data: created.data, key: created.key })
  })

  app.get('/api/v1/keys/:hash', noStore, auth, validate(one), async (req, res) => {
    const { params } = inputOf(one, req)
    res.json({ data: await getKey(deps.keys, callerOf(res), params.hash) })
  })

  app.patch('/api/v1/keys/:hash', noStore, auth, validate(patch), async (req, res) => {
    const { params, body } = inputOf(patch, req)
    const changes: KeyPatch = {
      name: body.name,
      disabled: body.disabled,
      limitMicros: micros(body.limit),
      limitReset: body.limit_reset,
      includeByokInLimit: body.include_byok_in_limit,
      expiresAt: date(body.expires_at),
      allowedDataRegions: body.allowed_data_regions,
    }
    res.json({ data: await updateKey(deps.keys, callerOf(res), params.hash, changes) })
  })

  app.delete('/api/v1/keys/:hash', noStore, auth, validate(one), async (req, res) => {
    const { params } = inputOf(one, req)
    res.json(await deleteKey(deps.keys, callerOf(res), params.hash))
  })
}

// --- OpenAPI ------------------------------------------------------------------------------------

const errors = {
  400: { description: 'invalid input (nothing written)', schema: ZError },
  401: { description: 'missing, unknown, disabled or expired key', schema: ZError },
  403: { description: 'not a management key', schema: ZError },
  429: { description: 'per-key rate limit', schema: ZError, headers: { 'Retry-After': 'seconds' } },
}

export const keysOperations: OperationDoc[] = [
  {
    method: 'get',
    path: '/api/v1/keys',
    operationId: 'listKeys',
    summary: "List the workspace's keys (management key)",
    tags: ['keys'],
    security: ['bearer'],
    request: list,
    responses: {
      200: { description: 'a page of keys, newest first', schema: ZKeyList },
      ...errors,
      404: { description: 'workspace_id names a workspace this key cannot reach', schema: ZError },
    },
  },
  {
    method: 'post',
    path: '/api/v1/keys',
    operationId: 'createKey',
    summary: 'Create a key in the workspace (management key); the plaintext key is returned once',
    tags: ['keys'],
    security: ['bearer'],
    request: create,
    responses: {
      201: { description: 'the new key', schema: ZCreatedKey },
      ...errors,
      404: { description: 'workspace_id names a workspace this key cannot reach', schema: ZError },
      409: { description: 'external.api_key is already the lookup key of another key', schema: ZError },
    },
  },
  {
    method: 'get',
    path: '/api/v1/keys/:hash',
    operationId: 'getKey',
    summary: 'One key of the workspace (management key)',
    tags: ['keys'],
    security: ['bearer'],
    request: one,
    responses: {
      200: { description: 'the key', schema: ZKeyItem },
      ...errors,
      404: { description: 'no such key in this workspace', schema: ZError },
    },
  },
  {
    method: 'patch',
    path: '/api/v1/keys/:hash',
    operationId: 'updateKey',
    summary: 'Change a key of the workspace (management key)',
    tags: ['keys'],
    security: ['bearer'],
    request: patch,
    responses: {
      200: { description: 'the changed key', schema: ZKeyItem },
      ...errors,
      404: { description: 'no such key in this workspace', schema: ZError },
    },
  },
  {
    method: 'delete',
    path: '/api/v1/keys/:hash',
    operationId: 'deleteKey',
    summary: 'Delete a key of the workspace, with its rollups and events (management key)',
    tags: ['keys'],
    security: ['bearer'],
    request: one,
    responses: {
      200: { description: 'deleted', schema: ZDeleted },
      ...errors,
      404: { description: 'no such key in this workspace', schema: ZError },
    },
  },
]

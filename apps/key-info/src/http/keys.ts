import { reply } from '@quartet/core/operation'
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
import { managementKey, NO_STORE } from './auth.ts'
import { define } from './deps.ts'
import {
  spendShape,
  ZDataRegions,
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

// --- operations ---------------------------------------------------------------------------------

const workspaceErrors = {
  workspace_not_found: 'workspace_id names a workspace this key cannot reach',
} as const
const keyErrors = { key_not_found: 'no such key in this workspace' } as const

export const listKeysOperation = define({
  name: 'listKeys',
  summary: "List the workspace's keys (management key)",
  tags: ['keys'],
  route: { method: 'get', path: '/api/v1/keys' },
  input: { query: ZListKeysQuery },
  responses: { 200: { description: 'a page of keys, newest first', schema: ZKeyList } },
  auth: managementKey,
  errors: { bad_request: 'invalid input (nothing written)', ...workspaceErrors },
  headers: NO_STORE,
  async handler({ query }, { deps, caller }) {
    const data: TManagedKey[] = await listKeys(deps.keys, caller, {
      offset: query.offset,
      limit: query.limit,
      includeDisabled: query.include_disabled,
      workspaceId: query.workspace_id,
    })
    return reply(200, { data })
  },
})

export const createKeyOperation = define({
  name: 'createKey',
  summary: 'Create a key in the workspace (management key); the plaintext key is returned once',
  tags: ['keys'],
  route: { method: 'post', path: '/api/v1/keys' },
  input: { body: ZCreateKey },
  responses: { 201: { description: 'the new key', schema: ZCreatedKey } },
  auth: managementKey,
  errors: {
    bad_request: 'invalid input (nothing written)',
    ...workspaceErrors,
    external_api_key_in_use: 'external.api_key is already the lookup key of another key',
  },
  headers: NO_STORE,
  async handler({ body }, { deps, caller }) {
    const created = await createWorkspaceKey(
      deps.keys,
      caller,
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
    return reply(201, { data: created.data, key: created.key })
  },
})

export const getKeyOperation = define({
  name: 'getKey',
  summary: 'One key of the workspace (management key)',
  tags: ['keys'],
  route: { method: 'get', path: '/api/v1/keys/:hash' },
  input: { params: ZKeyParams },
  responses: { 200: { description: 'the key', schema: ZKeyItem } },
  auth: managementKey,
  errors: { bad_request: 'invalid input (nothing written)', ...keyErrors },
  headers: NO_STORE,
  async handler({ params }, { deps, caller }) {
    return reply(200, { data: await getKey(deps.keys, caller, params.hash) })
  },
})

export const updateKeyOperation = define({
  name: 'updateKey',
  summary: 'Change a key of the workspace (management key)',
  tags: ['keys'],
  route: { method: 'patch', path: '/api/v1/keys/:hash' },
  input: { params: ZKeyParams, body: ZUpdateKey },
  responses: { 200: { description: 'the changed key', schema: ZKeyItem } },
  auth: managementKey,
  errors: { bad_request: 'invalid input (nothing written)', ...keyErrors },
  headers: NO_STORE,
  async handler({ params, body }, { deps, caller }) {
    const changes: KeyPatch = {
      name: body.name,
      disabled: body.disabled,
      limitMicros: micros(body.limit),
      limitReset: body.limit_reset,
      includeByokInLimit: body.include_byok_in_limit,
      expiresAt: date(body.expires_at),
      allowedDataRegions: body.allowed_data_regions,
    }
    return reply(200, { data: await updateKey(deps.keys, caller, params.hash, changes) })
  },
})

export const deleteKeyOperation = define({
  name: 'deleteKey',
  summary: 'Delete a key of the workspace, with its rollups and events (management key)',
  tags: ['keys'],
  route: { method: 'delete', path: '/api/v1/keys/:hash' },
  input: { params: ZKeyParams },
  responses: { 200: { description: 'deleted', schema: ZDeleted } },
  auth: managementKey,
  errors: { bad_request: 'invalid input (nothing written)', ...keyErrors },
  headers: NO_STORE,
  async handler({ params }, { deps, caller }) {
    return reply(200, await deleteKey(deps.keys, caller, params.hash))
  },
})

export const keysOperations = [
  listKeysOperation,
  createKeyOperation,
  getKeyOperation,
  updateKeyOperation,
  deleteKeyOperation,
]

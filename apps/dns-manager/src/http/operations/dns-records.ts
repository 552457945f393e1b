import { z } from 'zod'
import { RECORD_TYPES } from '../../domain/record-rules.ts'
import { createdId, acmeCredential, apiCredential, defineOperation } from '../define.ts'
import { ZDeleted, ZDnsRecordOutput, ZDnsRecordPage } from './outputs.ts'
import { ZPage, zId, zInteger } from './inputs.ts'
import { accountView } from './hot-reads.ts'

const zType = z.preprocess((v) => (typeof v === 'string' ? v.trim().toUpperCase() : v), z.enum(RECORD_TYPES))
const recordFields = {
  name: z.string().max(253).optional(),
  content: z.string().max(4096),
  ttl: zInteger(0, 2_147_483_647).optional(),
  priority: zInteger(-2_147_483_648, 2_147_483_647).optional(),
  weight: zInteger(-2_147_483_648, 2_147_483_647).optional(),
  port: zInteger(-2_147_483_648, 2_147_483_647).optional(),
  flag: zInteger(-2_147_483_648, 2_147_483_647).optional(),
  tag: z.string().max(32).optional(),
}

export const ZListRecords = z.strictObject({
  subdomain_id: zId,
  ...ZPage,
  type: zType.optional(),
  name: z.string().max(253).optional(),
})
export type TListRecords = z.infer<typeof ZListRecords>
export const ZRecordId = z.strictObject({ subdomain_id: zId, id: zId })
export type TRecordId = z.infer<typeof ZRecordId>
export const ZCreateRecord = z.strictObject({ subdomain_id: zId, type: zType, ...recordFields })
export type TCreateRecord = z.infer<typeof ZCreateRecord>
export const ZUpdateRecord = z.strictObject({
  subdomain_id: zId,
  id: zId,
  type: zType.optional(),
  ...recordFields,
  content: recordFields.content.optional(),
})
export type TUpdateRecord = z.infer<typeof ZUpdateRecord>

const recordArgs = 'name: String, ttl: Int, priority: Int, weight: Int, port: Int, flag: Int, tag: String'
const target = (i: { subdomain_id: number; id?: number }, o?: unknown) =>
  `subdomain:${i.subdomain_id}/record:${i.id ?? createdId(o, 'dns_record')}`

export const recordOperations = [
  defineOperation({
    name: 'dns_records.list',
    summary: 'List the DNS records of a subdomain',
    args: ZListRecords,
    output: ZDnsRecordPage,
    auth: apiCredential,
    errors: { subdomain_not_found: 'no such subdomain in the account' },
    hot: accountView("the subdomain's records"),
    write: false,
    rest: { method: 'get', path: '/subdomains/:subdomain_id/records' },
    graphql: {
      kind: 'query',
      field: 'dnsRecords',
      args: '(subdomain_id: Int!, cursor: String, per_page: Int, type: String, name: String)',
      type: 'DnsRecordPage!',
    },
    call: ({ useCases, principal }, input) => useCases.listRecords(principal, input),
  }),
  defineOperation({
    name: 'dns_records.get',
    summary: 'One DNS record',
    args: ZRecordId,
    output: ZDnsRecordOutput,
    auth: apiCredential,
    errors: {
      subdomain_not_found: 'no such subdomain in the account',
      dns_record_not_found: 'no such record in the subdomain',
    },
    hot: accountView('the record'),
    write: false,
    rest: { method: 'get', path: '/subdomains/:subdomain_id/records/:id' },
    graphql: {
      kind: 'query',
      field: 'dnsRecord',
      args: '(subdomain_id: Int!, id: Int!)',
      type: 'DnsRecordResult!',
    },
    call: ({ useCases, principal }, input) => useCases.getRecord(principal, input),
  }),
  defineOperation({
    name: 'dns_records.create',
    summary: 'Add a DNS record (validated per type, applied upstream before it is confirmed)',
    args: ZCreateRecord,
    output: ZDnsRecordOutput,
    auth: acmeCredential,
    errors: {
      subdomain_not_found: 'no such subdomain in the account',
      conflict: 'the record clashes with another at its name (CNAME)',
      quota_exceeded: 'the subdomain holds its maximum of records',
      provider_operation_failed: 'the DNS provider refused or failed the change',
    },
    write: true,
    rest: { method: 'post', path: '/subdomains/:subdomain_id/records', status: 201 },
    graphql: {
      kind: 'mutation',
      field: 'createDnsRecord',
      args: `(subdomain_id: Int!, type: String!, content: String!, ${recordArgs})`,
      type: 'DnsRecordResult!',
    },
    target,
    call: ({ useCases, principal }, input) => useCases.createRecord(principal, input),
  }),
  defineOperation({
    name: 'dns_records.update',
    summary: 'Change a DNS record (fields not given keep their values)',
    args: ZUpdateRecord,
    output: ZDnsRecordOutput,
    auth: acmeCredential,
    errors: {
      subdomain_not_found: 'no such subdomain in the account',
      dns_record_not_found: 'no such record in the subdomain',
      conflict: 'the record clashes with another at its name (CNAME)',
      provider_operation_failed: 'the DNS provider refused or failed the change',
    },
    write: true,
    rest: {
      method: 'post',
      path: '/subdomains/:subdomain_id/records/:id',
      also: [{ method: 'patch', path: '/subdomains/:subdomain_id/records/:id' }],
    },
    graphql: {
      kind: 'mutation',
      field: 'updateDnsRecord',
      args: `(subdomain_id: Int!, id: Int!, type: String, content: String, ${recordArgs})`,
      type: 'DnsRecordResult!',
    },
    target,
    call: ({ useCases, principal }, input) => useCases.updateRecord(principal, input),
  }),
  defineOperation({
    name: 'dns_records.delete',
    summary: 'Remove a DNS record',
    args: ZRecordId,
    output: ZDeleted,
    auth: acmeCredential,
    errors: {
      subdomain_not_found: 'no such subdomain in the account',
      dns_record_not_found: 'no such record in the subdomain',
      provider_operation_failed: 'the DNS provider refused or failed the change',
    },
    write: true,
    rest: {
      method: 'post',
      path: '/subdomains/:subdomain_id/records/:id/delete',
      also: [{ method: 'delete', path: '/subdomains/:subdomain_id/records/:id' }],
    },
    graphql: {
      kind: 'mutation',
      field: 'deleteDnsRecord',
      args: '(subdomain_id: Int!, id: Int!)',
      type: 'Deleted!',
    },
    target,
    call: ({ useCases, principal }, input) => useCases.deleteRecord(principal, input),
  }),
]

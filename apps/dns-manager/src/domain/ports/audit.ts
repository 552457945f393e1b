// The audit log of what the API and the pages did (every operation group writes to it).

export interface AuditEntry {
  accountId: string | null
  credentialId: string | null
  ip: string | null
  operation: string
  target: string | null
  outcome: string
  /** `api` (a credential; the default) or `web` (a back-office session). */
  via?: 'api' | 'web'
}
export interface AuditRow extends Required<AuditEntry> {
  id: string
  createdAt: Date
}

export interface AuditStore {
  audit(entry: AuditEntry): Promise<void>
  /** The account's entries, newest first; `beforeId` pages back. */
  listAudit(accountId: string, options: { limit: number; beforeId?: string | undefined }): Promise<AuditRow[]>
}

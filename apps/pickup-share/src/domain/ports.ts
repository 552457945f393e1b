/**
 * Ports the domain owns and adapters implement (DESIGN "One layout for all apps"). The storage
 * port, older and larger, lives in storage.ts; new ones go here.
 */

/** The tus side of a storage instance, as the domain needs it (storage/tus-endpoints.ts implements it). */
export interface ResumableDataPort {
  /** Removes an unfinished upload's partial data; nothing there is not an error. */
  removeUnfinished(instance: string, pathname: string): Promise<void>
}

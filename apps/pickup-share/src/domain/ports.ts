/**
 * Ports the domain owns and adapters implement (docs/ARCHITECTURE.md). The storage
 * port, older and larger, lives in storage.ts; new ones go here.
 */

/** The tus side of a storage instance, as the domain needs it (storage/tus-endpoints.ts implements it). */
export interface ResumableDataPort {
  /**
   * Under the upload's lock: 'finished' when the file is in the store (left alone), else its
   * partial data is removed (nothing there is not an error) and 'removed'.
   */
  expireIfUnfinished(instance: string, pathname: string): Promise<'finished' | 'removed'>
}

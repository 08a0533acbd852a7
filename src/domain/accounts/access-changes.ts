/**
 * How instances tell each other that access changed (a secret reset, a client deleted, an
 * account disabled or enabled, a plan saved, a signing key rotated), so that each drops what it
 * cached at once instead of at its cache bound. Redis and PostgreSQL each carry such notices
 * (src/coordination/redis-coordination.ts, src/store/change-notices.ts).
 */
export interface AccessChangeNotices {
  /** Tells every instance, this one included. Best effort: the cache bounds cover a lost notice. */
  announceAccessChange(): void;
  /**
   * Calls `onChange` whenever any instance announces a change, and whenever notices may have
   * been missed (listening again after a lost connection). Resolves once listening was first
   * tried; it goes on trying by itself.
   */
  onAccessChange(onChange: () => void): Promise<void>;
  close(): Promise<void>;
}

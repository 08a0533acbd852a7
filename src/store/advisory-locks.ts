import { sql, type Transaction } from 'kysely';
import type { DialectCapabilities } from './dialect.ts';
import type { Schema } from './schema.ts';

/**
 * Every advisory lock the store takes, by name: one list, so no two jobs can share a key by
 * accident. The keys are arbitrary constants of ours, kept as they were released: an instance
 * still running an older version must take the same lock for the same job.
 */
export const ADVISORY_LOCKS = {
  /** Held shared by every ingest transaction, exclusively by the fold for one statement: see ingest-writes.ts. */
  foldBarrier: 727_051,
  /** One instance folds at a time (aggregate-fold.ts). */
  fold: 727_052,
  /** TAXII's date_added is handed out by one transaction at a time (taxii-repository.ts). */
  taxiiVersions: 727_119,
  /** One instance runs the retention pass at a time (maintenance.ts). */
  maintenance: 727_272,
  /** One instance prunes the audit log at a time (audit-retention.ts). */
  auditPruning: 727_273,
  /** peer_indicators' seq is handed out by one transaction at a time, so commit order is seq order (peers-repository.ts). */
  peerIndicators: 727_301,
  /** One process erases closing accounts at a time (account-erasure.ts). */
  accountClosing: 727_350,
} as const;

export type AdvisoryLock = keyof typeof ADVISORY_LOCKS;

/**
 * Waits for `lock`, held until `trx` ends; `shared` holders only keep out an exclusive one.
 * Where the store has no advisory locks (SQLite), nothing is taken: it has one writer at a time,
 * whose write lock a transaction takes at its first write.
 */
export async function holdAdvisoryLock(trx: Transaction<Schema>, caps: DialectCapabilities, lock: AdvisoryLock, mode: 'exclusive' | 'shared' = 'exclusive'): Promise<void> {
  if (!caps.advisoryLocks) return;
  const key = ADVISORY_LOCKS[lock];
  await (mode === 'shared' ? sql`select pg_advisory_xact_lock_shared(${key})` : sql`select pg_advisory_xact_lock(${key})`).execute(trx);
}

/**
 * Takes `lock` until `trx` ends unless another transaction holds it: false when one does, and
 * the caller leaves the work to it. Where the store has no advisory locks, true (see above).
 */
export async function tryAdvisoryLock(trx: Transaction<Schema>, caps: DialectCapabilities, lock: AdvisoryLock): Promise<boolean> {
  if (!caps.advisoryLocks) return true;
  const { rows } = await sql<{ locked: boolean }>`select pg_try_advisory_xact_lock(${ADVISORY_LOCKS[lock]}) as locked`.execute(trx);
  return rows[0]?.locked === true;
}

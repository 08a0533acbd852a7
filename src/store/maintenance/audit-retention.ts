import { sql, type Kysely, type SelectQueryBuilder } from 'kysely';
import type { Logger } from 'pino';
import { FAILURE_ACTIONS, type AuditAction, type AuditRetentionPolicy } from '../../domain/accounts/audit.ts';
import { tryAdvisoryLock } from '../advisory-locks.ts';
import type { Database } from '../database.ts';
import type { Schema } from '../schema.ts';
import type { MaintenanceWriter } from './maintenance-writer.ts';

/** What one pruning removed. */
export interface AuditPruneReport {
  /** Rows older than the retention. */
  expired: number;
  /** Failure rows beyond the cap. */
  capped: number;
}

const DAY_MS = 86_400_000;
/**
 * Rows deleted per transaction. A first pass over a log that grew for months may remove
 * millions; in one SQLite transaction that would hold the write lock for seconds, past the 5 s
 * the intake writer waits for it. Batches of 10,000 take milliseconds each.
 */
const BATCH = 10_000;

/**
 * Keeps the audit log bounded: rows older than the retention go, and of the rows failed
 * authentication writes (FAILURE_ACTIONS) only the newest `maxFailureRows` stay. The hourly
 * store maintenance prunes; so does this process whenever it has written a tenth of the cap in
 * failure rows since it last did, so a flood from rotating addresses is cut back within minutes
 * rather than within the hour. With `writer` (a SQLite file) the deletes run on the writer thread:
 * on this thread's connection each batch would sleep the thread that answers requests until
 * intake let go of the write lock, and a flood of failures is when they run most.
 */
export class AuditRetention {
  private readonly database: Database;
  readonly policy: AuditRetentionPolicy;
  private readonly log: Logger | undefined;
  private readonly writer: MaintenanceWriter | undefined;
  private readonly failureActions = new Set<AuditAction>(FAILURE_ACTIONS);
  private failureRowsSincePrune = 0;
  private pruning: Promise<AuditPruneReport> | undefined;

  constructor(database: Database, policy: AuditRetentionPolicy, log?: Logger, writer?: MaintenanceWriter) {
    this.database = database;
    this.policy = policy;
    this.log = log;
    this.writer = writer;
  }

  /** Counts a row written; past a tenth of the cap in failure rows, prunes in the background. */
  noteWritten(action: AuditAction): void {
    if (!this.failureActions.has(action)) return;
    this.failureRowsSincePrune += 1;
    this.pruneIfPiledUp();
  }

  /** Removes expired rows and failure rows beyond the cap; one pass at a time in this process. */
  prune(now = new Date()): Promise<AuditPruneReport> {
    if (this.pruning) return this.pruning;
    this.failureRowsSincePrune = 0;
    this.pruning = this.pruneLogged(now).finally(() => {
      this.pruning = undefined;
      // Rows written while it ran were counted: enough of them start the next pass at once, so
      // a steady flood leaves at most the cap and a tenth of it.
      this.pruneIfPiledUp();
    });
    return this.pruning;
  }

  private pruneIfPiledUp(): void {
    if (this.pruning || this.failureRowsSincePrune < Math.ceil(this.policy.maxFailureRows / 10)) return;
    this.prune().catch((err: unknown) => this.log?.warn({ err }, 'audit pruning failed; will retry'));
  }

  private async pruneLogged(now: Date): Promise<AuditPruneReport> {
    const report = this.writer
      ? ((await this.writer.write({ store: 'maintenance', method: 'pruneAudit', args: [this.policy, now.toISOString()] })) as AuditPruneReport)
      : await this.pruneHere(now);
    const { expired, capped } = report;
    const cutoff = new Date(now.getTime() - this.policy.days * DAY_MS).toISOString();
    if (expired + capped > 0) this.log?.info({ expired, capped, cutoff, max_failure_rows: this.policy.maxFailureRows }, 'audit log pruned');
    return report;
  }

  /** One pruning on this thread's connection (the writer thread's, for a SQLite file). */
  async pruneHere(now: Date): Promise<AuditPruneReport> {
    const { db } = this.database;
    const cutoff = new Date(now.getTime() - this.policy.days * DAY_MS).toISOString();
    const expired = await this.deleteInBatches((trx) =>
      trx.selectFrom('audit_log').select('id').where('at', '<', cutoff).orderBy('id').limit(BATCH),
    );
    // The id of the newest failure row beyond the cap; every failure row up to it goes.
    const beyond = await db
      .selectFrom('audit_log')
      .select('id')
      .where('action', 'in', FAILURE_ACTIONS)
      .orderBy('id', 'desc')
      .limit(1)
      .offset(this.policy.maxFailureRows)
      .executeTakeFirst();
    const capped = beyond
      ? await this.deleteInBatches((trx) =>
          trx.selectFrom('audit_log').select('id').where('action', 'in', FAILURE_ACTIONS).where('id', '<=', beyond.id).orderBy('id').limit(BATCH),
        )
      : 0;
    return { expired, capped };
  }

  /**
   * Deletes the rows `batch` selects, one transaction per batch, until it selects fewer than a
   * batch. On PostgreSQL instances take turns under an advisory lock: one that finds it held
   * leaves the work to the holder.
   */
  private async deleteInBatches(batch: (trx: Kysely<Schema>) => SelectQueryBuilder<Schema, 'audit_log', { id: number }>): Promise<number> {
    const { db, caps } = this.database;
    let removed = 0;
    for (;;) {
      const deleted = await db.transaction().execute(async (trx) => {
        if (!(await tryAdvisoryLock(trx, caps, 'auditPruning'))) return 0;
        const result = await trx.deleteFrom('audit_log').where('id', 'in', batch(trx)).executeTakeFirst();
        return Number(result.numDeletedRows);
      });
      removed += deleted;
      if (deleted < BATCH) return removed;
    }
  }
}

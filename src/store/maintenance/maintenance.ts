import { sql } from 'kysely';
import type { Logger } from 'pino';
import { tryAdvisoryLock } from '../advisory-locks.ts';
import { removeEventsAndRecompute, type KeysRecomputed } from '../fold/aggregates-rebuild.ts';
import type { AuditRetentionPolicy } from '../../domain/accounts/audit.ts';
import { AuditRetention, type AuditPruneReport } from './audit-retention.ts';
import type { Database } from '../database.ts';
import { ensurePartitions, partitionsBefore } from './partitions.ts';
import type { MaintenanceWriter } from './maintenance-writer.ts';

/** What one maintenance pass did. */
export interface MaintenanceReport {
  partitionsDropped: string[];
  /** Events deleted row by row (not counting those in partitions dropped whole). */
  eventsRemoved: number;
  /** The numbers and addresses whose aggregates were recomputed, when events were removed. */
  keysRecomputed?: KeysRecomputed;
  /** Audit rows past their retention or beyond the failure-row cap. */
  auditRowsRemoved: number;
}

const DAY_MS = 86_400_000;

/**
 * Keeps the store in shape: monthly partitions created ahead (PostgreSQL), the audit log pruned
 * to its retention (when given one), and, when an event retention is set, events older than it
 * removed (whole partitions dropped on PostgreSQL) with the lookup aggregates of the numbers and
 * addresses they counted in recomputed, so the aggregates describe exactly the events kept.
 */
export class StoreMaintenance {
  private readonly database: Database;
  private readonly retentionDays: number | undefined;
  private readonly log: Logger | undefined;
  private readonly auditRetention: AuditRetention | undefined;
  private readonly writer: MaintenanceWriter | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly alsoEach: Array<() => Promise<unknown>> = [];

  /**
   * With `writer` (a SQLite file) each pass runs on the writer thread, in turn with intake: on
   * this thread's connection its deletes and recomputes would sleep the thread that answers
   * requests, for the whole pass and for as long as intake held the write lock before it.
   */
  constructor(database: Database, retentionDays: number | undefined, log?: Logger, auditRetention?: AuditRetention, writer?: MaintenanceWriter) {
    this.database = database;
    this.retentionDays = retentionDays;
    this.log = log;
    this.auditRetention = auditRetention;
    this.writer = writer;
  }

  /** Work each pass of `start` runs after its own, on this thread (finishing accounts left closing). */
  alsoEachPass(work: () => Promise<unknown>): void {
    this.alsoEach.push(work);
  }

  /** Runs now and then every `everyMs`, in the background. */
  start(everyMs = 3_600_000): void {
    const pass = async () => {
      await this.runOnce().catch((err: unknown) => this.log?.warn({ err }, 'store maintenance failed; will retry'));
      for (const work of this.alsoEach) await work().catch((err: unknown) => this.log?.warn({ err }, 'store maintenance failed; will retry'));
    };
    void pass();
    this.timer = setInterval(pass, everyMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  /** One pass; on PostgreSQL only one instance at a time does the work. */
  async runOnce(now = new Date()): Promise<MaintenanceReport> {
    if (!this.writer) return this.runHere(now);
    const report = (await this.writer.write({ store: 'maintenance', method: 'runOnce', args: [this.retentionDays, this.auditRetention?.policy, now.toISOString()] })) as MaintenanceReport;
    if (report.keysRecomputed) this.log?.info({ ...report, cutoff: this.cutoff(now) }, 'retention applied');
    if (report.auditRowsRemoved > 0) this.log?.info({ removed: report.auditRowsRemoved }, 'audit log pruned');
    return report;
  }

  /** One pass on this thread's connection (the writer thread's, for a SQLite file). */
  private async runHere(now: Date): Promise<MaintenanceReport> {
    // Retention deletes and recomputes in statements far longer than a request's (Database.unhurried).
    const { unhurried: db, caps } = this.database;
    const report: MaintenanceReport = { partitionsDropped: [], eventsRemoved: 0, auditRowsRemoved: 0 };
    if (caps.partitionedEvents) await ensurePartitions(db, now);
    await this.database.refreshPlannerStatistics?.();
    if (this.auditRetention) {
      const { expired, capped } = await this.auditRetention.prune(now);
      report.auditRowsRemoved = expired + capped;
    }
    const cutoff = this.cutoff(now);
    if (cutoff === undefined) return report;

    await db.transaction().execute(async (trx) => {
      if (!(await tryAdvisoryLock(trx, caps, 'maintenance'))) return;
      const partitions = caps.partitionedEvents ? await partitionsBefore(trx, cutoff) : [];
      const remove = async () => {
        for (const partition of partitions) {
          await sql`drop table ${sql.table(partition)}`.execute(trx);
          report.partitionsDropped.push(partition);
        }
        // What no whole partition held: the default partition on PostgreSQL, everything on SQLite.
        const deleted = await trx.deleteFrom('events').where('event_time', '<', cutoff).executeTakeFirst();
        report.eventsRemoved = Number(deleted.numDeletedRows);
        // The identities of the events removed (kept apart only where events are partitioned).
        if (caps.partitionedEvents) await trx.deleteFrom('event_ids').where('event_time', '<', cutoff).execute();
      };
      // Every event to go, in the partitions to drop as in the rest.
      const older = sql`(select number_key, source_ip from events where event_time < ${cutoff})`;
      // Only a pass that finds events to remove recomputes aggregates (and makes every process
      // forget what it keeps of them).
      const any = await sql<{ one: number }>`select 1 as one from ${older} o limit 1`.execute(trx);
      if (any.rows.length === 0) await remove();
      else report.keysRecomputed = await removeEventsAndRecompute(trx, caps, older, remove);
    });
    if (report.keysRecomputed) this.log?.info({ ...report, cutoff }, 'retention applied');
    return report;
  }

  private cutoff(now: Date): string | undefined {
    return this.retentionDays === undefined ? undefined : new Date(now.getTime() - this.retentionDays * DAY_MS).toISOString();
  }
}

/** The passes the writer thread runs for the main thread's StoreMaintenance and AuditRetention, from their settings. */
export class MaintenanceOnThisThread {
  private readonly database: Database;

  constructor(database: Database) {
    this.database = database;
  }

  runOnce(retentionDays: number | undefined, auditPolicy: AuditRetentionPolicy | undefined, now: string): Promise<MaintenanceReport> {
    const audit = auditPolicy && new AuditRetention(this.database, auditPolicy);
    return new StoreMaintenance(this.database, retentionDays, undefined, audit).runOnce(new Date(now));
  }

  pruneAudit(policy: AuditRetentionPolicy, now: string): Promise<AuditPruneReport> {
    return new AuditRetention(this.database, policy).pruneHere(new Date(now));
  }
}

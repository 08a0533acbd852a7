import { sql, type Kysely, type Selectable } from 'kysely';
import type { LookupKind } from '../../domain/lookups/lookup-aggregates.ts';
import type { AcceptedCount, ReportReason, ReportsRepository, ReportState, StoredReport } from '../../domain/intelligence/value-reports.ts';
import type { Schema, ValueReportsTable } from '../schema.ts';

/** False-positive reports in the SQL store (migration 029). */
export class SqlReportsRepository implements ReportsRepository {
  private readonly db: Kysely<Schema>;
  /** Tells other processes that the accepted set changed (PostgreSQL's NOTIFY; SQLite's counter moves by trigger). */
  private readonly announce: () => void;

  constructor(db: Kysely<Schema>, announce: () => void = () => {}) {
    this.db = db;
    this.announce = announce;
  }

  async insertPending(report: StoredReport): Promise<{ report: StoredReport; created: boolean }> {
    // The partial unique index keeps one pending report per account and value: a second insert
    // (a retry, or a race between two) does nothing, and the one stored is answered.
    const inserted = await this.db
      .insertInto('value_reports')
      .values(report)
      // The index's predicate written as the index writes it: SQLite matches a conflict target to a
      // partial index by its text, and a bound parameter is not the literal.
      .onConflict((oc) => oc.columns(['account_id', 'kind', 'value']).where('state', '=', sql.lit('pending')).doNothing())
      .executeTakeFirst();
    if ((inserted.numInsertedOrUpdatedRows ?? 0n) > 0n) return { report, created: true };
    const row = await this.db
      .selectFrom('value_reports')
      .selectAll()
      .where('account_id', '=', report.account_id)
      .where('kind', '=', report.kind)
      .where('value', '=', report.value)
      .where('state', '=', 'pending')
      .executeTakeFirstOrThrow();
    return { report: reportOf(row), created: false };
  }

  async listForAccount(accountId: string, limit: number): Promise<StoredReport[]> {
    const rows = await this.db.selectFrom('value_reports').selectAll().where('account_id', '=', accountId).orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit).execute();
    return rows.map(reportOf);
  }

  async listByState(state: ReportState | undefined, limit: number): Promise<StoredReport[]> {
    let query = this.db.selectFrom('value_reports').selectAll();
    if (state) query = query.where('state', '=', state);
    const rows = await query.orderBy('created_at').orderBy('id').limit(limit).execute();
    return rows.map(reportOf);
  }

  async find(id: string): Promise<StoredReport | undefined> {
    const row = await this.db.selectFrom('value_reports').selectAll().where('id', '=', id).executeTakeFirst();
    return row && reportOf(row);
  }

  async decide(id: string, from: readonly ReportState[], to: ReportState, at: string, note: string | null): Promise<boolean> {
    const result = await this.db
      .updateTable('value_reports')
      .set({ state: to, decided_at: at, decision_note: note })
      .where('id', '=', id)
      .where('state', 'in', [...from])
      .executeTakeFirst();
    const moved = result.numUpdatedRows > 0n;
    if (moved) this.announce();
    return moved;
  }

  async acceptedCounts(): Promise<AcceptedCount[]> {
    const rows = await this.db
      .selectFrom('value_reports')
      .select(['kind', 'value'])
      .select((eb) => eb.fn.count<number | string | bigint>('account_id').distinct().as('accounts'))
      .where('state', '=', 'accepted')
      .groupBy(['kind', 'value'])
      .execute();
    return rows.map((r) => ({ kind: r.kind as LookupKind, value: r.value, accounts: Number(r.accounts) }));
  }
}

function reportOf(row: Selectable<ValueReportsTable>): StoredReport {
  return {
    id: row.id,
    account_id: row.account_id,
    kind: row.kind as LookupKind,
    value: row.value,
    reason: row.reason as ReportReason,
    note: row.note,
    state: row.state as ReportState,
    created_at: row.created_at,
    decided_at: row.decided_at,
    decision_note: row.decision_note,
  };
}

import type { Insertable, Kysely, Selectable } from 'kysely';
import type { Logger } from 'pino';
import type { AuditAction, AuditEntry, AuditQuery, AuditRecord, AuditTrail } from '../../domain/accounts/audit.ts';
import type { AuditRetention } from '../maintenance/audit-retention.ts';
import type { AuditLogTable, Schema } from '../schema.ts';

/** Writes audit rows: on a SQLite file through the writer thread (writes-on-writer.ts), as every background write. */
export interface AuditRowWriter {
  insertRow(row: Insertable<AuditLogTable>): Promise<void>;
}

/** Audit rows written on this connection. */
export class SqlAuditRows implements AuditRowWriter {
  private readonly db: Kysely<Schema>;

  constructor(db: Kysely<Schema>) {
    this.db = db;
  }

  async insertRow(row: Insertable<AuditLogTable>): Promise<void> {
    await this.db.insertInto('audit_log').values(row).execute();
  }
}

/**
 * Audit entries into the `audit_log` table and, as one structured line each, the log. Each row
 * written is told to the retention, which prunes once failure rows pile up. Rows are written
 * through `rows` (this connection unless given) and read here.
 */
export class SqlAuditTrail implements AuditTrail {
  private readonly db: Kysely<Schema>;
  private readonly log: Logger | undefined;
  private readonly retention: AuditRetention | undefined;
  private readonly rows: AuditRowWriter;

  constructor(db: Kysely<Schema>, log?: Logger, retention?: AuditRetention, rows: AuditRowWriter = new SqlAuditRows(db)) {
    this.db = db;
    this.log = log;
    this.retention = retention;
    this.rows = rows;
  }

  async record(entry: AuditEntry): Promise<void> {
    const at = new Date().toISOString();
    this.log?.info({ audit: entry.action, actor: entry.actor, account_id: entry.accountId, client_id: entry.clientId, ip: entry.ip, ...entry.detail }, 'audit');
    await this.rows.insertRow({
      at,
      action: entry.action,
      actor: entry.actor,
      account_id: entry.accountId ?? null,
      client_id: entry.clientId ?? null,
      ip: entry.ip ?? null,
      detail: entry.detail ? JSON.stringify(entry.detail) : null,
    });
    this.retention?.noteWritten(entry.action);
  }

  async list({ accountId, limit }: AuditQuery): Promise<AuditRecord[]> {
    let query = this.db.selectFrom('audit_log').selectAll().orderBy('id', 'desc').limit(limit);
    if (accountId !== undefined) query = query.where('account_id', '=', accountId);
    return (await query.execute()).map(toRecord);
  }
}

function toRecord(row: Selectable<AuditLogTable>): AuditRecord {
  return {
    // PostgreSQL's bigserial arrives as a string; the entry's id is a number on every store.
    id: Number(row.id),
    at: row.at,
    // Only record() writes this table, and it writes AuditActions.
    action: row.action as AuditAction,
    actor: row.actor,
    account_id: row.account_id,
    client_id: row.client_id,
    ip: row.ip,
    detail: row.detail ? (JSON.parse(row.detail) as Record<string, unknown>) : null,
  };
}

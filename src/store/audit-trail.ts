import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { AuditEntry, AuditTrail } from '../domain/audit.ts';
import type { Schema } from './schema.ts';

/** Audit entries into the `audit_log` table and, as one structured line each, the log. */
export class SqlAuditTrail implements AuditTrail {
  private readonly db: Kysely<Schema>;
  private readonly log: Logger | undefined;

  constructor(db: Kysely<Schema>, log?: Logger) {
    this.db = db;
    this.log = log;
  }

  async record(entry: AuditEntry): Promise<void> {
    const at = new Date().toISOString();
    this.log?.info({ audit: entry.action, actor: entry.actor, account_id: entry.accountId, client_id: entry.clientId, ip: entry.ip, ...entry.detail }, 'audit');
    await this.db
      .insertInto('audit_log')
      .values({
        at,
        action: entry.action,
        actor: entry.actor,
        account_id: entry.accountId ?? null,
        client_id: entry.clientId ?? null,
        ip: entry.ip ?? null,
        detail: entry.detail ? JSON.stringify(entry.detail) : null,
      })
      .execute();
  }
}

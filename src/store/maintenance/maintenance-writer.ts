import type { AuditRetentionPolicy } from '../../domain/accounts/audit.ts';

/**
 * The writer thread as store maintenance uses it (writer/writer-thread.ts): for a SQLite file
 * each pass runs there, in turn with intake. Declared here, by what maintenance sends, so that
 * maintenance and the writer thread do not import each other.
 */
export interface MaintenanceWriter {
  write(
    write:
      | { store: 'maintenance'; method: 'runOnce'; args: [retentionDays: number | undefined, auditPolicy: AuditRetentionPolicy | undefined, now: string] }
      | { store: 'maintenance'; method: 'pruneAudit'; args: [policy: AuditRetentionPolicy, now: string] },
  ): Promise<unknown>;
}

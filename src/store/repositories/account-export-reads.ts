import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { AccountExportReader, ExportKind } from '../../domain/accounts/account-export.ts';
import { EVENT_FIELDS } from '../../domain/events/event-fields.ts';
import type { Schema } from '../schema.ts';
import { ofAccount, ofIntegrations, ofUsers } from './account-rows.ts';

/** Records per read: one page of the export in memory at a time. */
export const EXPORT_PAGE = 1000;

/**
 * Where each kind of an export is read from. `columns` is the whole of what the export shows
 * (written out, so a secret column added to a table is never exported by default); `key` the
 * columns that order the rows and page through them (read, and left out of the record unless
 * also in `columns`).
 */
interface ExportSource {
  table: string;
  columns: readonly string[];
  key: readonly string[];
  rows: (id: string) => RawBuilder<unknown>;
  /** What a record shows of a row whose columns are not all for every row to show. */
  shown?: (record: Record<string, unknown>) => Record<string, unknown>;
}

const SOURCES: Record<ExportKind, ExportSource> = {
  account: { table: 'accounts', columns: ['account_id', 'name', 'plan', 'trusted', 'disabled', 'created_at'], key: ['account_id'], rows: ofAccount('account_id') },
  user: { table: 'users', columns: ['user_id', 'email', 'role', 'disabled', 'created_at'], key: ['user_id'], rows: ofAccount('account_id') },
  invitation: { table: 'user_invitations', columns: ['user_id', 'purpose', 'created_at', 'expires_at', 'used_at'], key: ['token_hash'], rows: ofUsers },
  invited_address: { table: 'invitation_stand_ins', columns: ['email', 'role', 'created_at'], key: ['user_id'], rows: ofAccount('account_id') },
  // Whether and since when each user signs in with a second factor: never the secret or the recovery codes.
  two_factor: { table: 'user_two_factor', columns: ['user_id', 'enrolled_at', 'created_at'], key: ['user_id'], rows: ofUsers },
  sso_identity: { table: 'oidc_identities', columns: ['user_id', 'issuer', 'subject', 'created_at'], key: ['issuer', 'subject'], rows: ofUsers },
  client: {
    table: 'clients',
    columns: ['client_id', 'name', 'permissions', 'created_at', 'last_used_at', 'last_token_address', 'last_call_at', 'last_call_address'],
    key: ['client_id'],
    rows: ofAccount('account_id'),
  },
  ingest_url: { table: 'ingest_urls', columns: ['id', 'name', 'created_at', 'last_used_at', 'revoked_at'], key: ['id'], rows: ofAccount('account_id') },
  integration: {
    table: 'integrations',
    columns: ['id', 'kind', 'name', 'target', 'alert_types', 'min_score', 'created_at', 'confirmed_at', 'disabled_at', 'disabled_reason'],
    key: ['id'],
    rows: ofAccount('account_id'),
    // A Slack URL is its credential, never shown again once saved (docs/dashboard.md): nor exported.
    shown: (record) => (record.kind === 'slack' ? { ...record, target: null } : record),
  },
  node_name: { table: 'node_names', columns: ['node_id', 'name', 'named_at'], key: ['node_id'], rows: ofAccount('account_id') },
  allowlist_entry: { table: 'allowlist_entries', columns: ['id', 'kind', 'value', 'note', 'added_by', 'added_at'], key: ['id'], rows: ofAccount('owner') },
  report: {
    table: 'value_reports',
    columns: ['id', 'kind', 'value', 'reason', 'note', 'state', 'created_at', 'decided_at', 'decision_note'],
    key: ['id'],
    rows: ofAccount('account_id'),
  },
  alert: { table: 'alerts', columns: ['id', 'type', 'subject', 'data', 'integration_id', 'state', 'created_at'], key: ['id'], rows: ofAccount('account_id') },
  alert_delivery: {
    table: 'alert_deliveries',
    columns: ['id', 'alert_id', 'integration_id', 'status', 'attempts', 'next_attempt_at', 'created_at'],
    key: ['id'],
    rows: ofAccount('account_id'),
  },
  delivery_attempt: {
    table: 'delivery_attempts',
    columns: ['id', 'delivery_id', 'integration_id', 'attempt', 'at', 'duration_ms', 'status_code', 'error', 'outcome'],
    key: ['id'],
    rows: ofIntegrations,
  },
  contributor_request: {
    table: 'contributor_requests',
    columns: ['request_id', 'user_id', 'honeypots', 'status', 'reason', 'created_at', 'decided_at', 'decided_by'],
    key: ['request_id'],
    rows: ofAccount('account_id'),
  },
  board_alias: { table: 'board_aliases', columns: ['alias', 'created_at'], key: ['account_id'], rows: ofAccount('account_id') },
  audit: { table: 'audit_log', columns: ['id', 'at', 'action', 'actor', 'client_id', 'ip', 'detail'], key: ['id'], rows: ofAccount('account_id') },
  // By (event_time, id): the order of the events' own index, so each page is one range read.
  event: { table: 'events', columns: [...EVENT_FIELDS, 'event_time', 'received_at'], key: ['event_time', 'id'], rows: ofAccount('account_id') },
};

/** An account's export read from the SQL store by keyset pages (never OFFSET: each page costs the same). */
export class SqlAccountExportReader implements AccountExportReader {
  private readonly db: Kysely<Schema>;
  private readonly pageSize: number;

  constructor(db: Kysely<Schema>, pageSize = EXPORT_PAGE) {
    this.db = db;
    this.pageSize = pageSize;
  }

  async *pages(kind: ExportKind, accountId: string): AsyncGenerator<Array<Record<string, unknown>>> {
    const source = SOURCES[kind];
    const selected = [...new Set([...source.columns, ...source.key])];
    const keys = sql.join(source.key.map((column) => sql.ref(column)));
    let after: unknown[] | undefined;
    for (;;) {
      const past = after ? sql`and (${keys}) > (${sql.join(after)})` : sql``;
      const { rows } = await sql<Record<string, unknown>>`select ${sql.join(selected.map((column) => sql.ref(column)))} from ${sql.table(source.table)}
        where (${source.rows(accountId)}) ${past} order by ${keys} limit ${this.pageSize}`.execute(this.db);
      if (rows.length === 0) return;
      const last = rows.at(-1) as Record<string, unknown>;
      after = source.key.map((column) => last[column]);
      const { shown = (record: Record<string, unknown>) => record } = source;
      yield rows.map((row) => shown(recordOf(row, source.columns)));
      if (rows.length < this.pageSize) return;
    }
  }
}

function recordOf(row: Record<string, unknown>, columns: readonly string[]): Record<string, unknown> {
  const record: Record<string, unknown> = {};
  for (const column of columns) record[column] = row[column];
  return record;
}

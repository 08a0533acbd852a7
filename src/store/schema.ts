import type { ColumnType, Generated } from 'kysely';

/**
 * Row types of every table. Booleans are 0/1 integers and instants ISO-8601 text so that one
 * set of queries serves SQLite and PostgreSQL alike; counters are 64-bit (`bigint` on
 * PostgreSQL, where `pg` hands them back as strings, hence the `number | string` reads).
 */
export interface Schema {
  accounts: AccountsTable;
  clients: ClientsTable;
  signing_keys: SigningKeysTable;
  events: EventsTable;
  event_ids: EventIdsTable;
  number_stats: NumberStatsTable;
  number_methods: NumberMethodsTable;
  number_forms: NumberFormsTable;
  number_sources: NumberSourcesTable;
  ip_stats: IpStatsTable;
  ip_user_agents: IpUserAgentsTable;
  ip_transports: IpTransportsTable;
  ip_numbers: IpNumbersTable;
  plans: PlansTable;
  audit_log: AuditLogTable;
  server_secrets: ServerSecretsTable;
  ingest_urls: IngestUrlsTable;
}

type Counter = ColumnType<number | string, number, number>;
type Flag = ColumnType<number, number, number>;

export interface AccountsTable {
  account_id: string;
  name: string;
  plan: string;
  trusted: Flag;
  disabled: Flag;
  created_at: string;
}

export interface ClientsTable {
  client_id: string;
  account_id: string;
  name: string;
  /** Space-separated, as in the token's `scope` claim. */
  permissions: string;
  /** SHA-256 (hex) of the secret; the secret itself is never stored. */
  secret_hash: string;
  /** Bumped on every reset; tokens carry the version they were issued under. */
  secret_version: number;
  created_at: string;
}

export interface SigningKeysTable {
  kid: string;
  alg: string;
  /** The private JWK, sealed with the key secret (src/domain/key-sealing.ts). */
  private_jwk: string;
  public_jwk: string;
  created_at: string;
  /** 1 on the one key that signs new tokens, NULL on the others; unique (migration 009). */
  current_key: 1 | null;
  /** When the key stops verifying and leaves the JWKS (ISO 8601); NULL while it is current. */
  retires_at: string | null;
}

/**
 * One text column per event field (src/domain/event-fields.ts), written out rather than derived:
 * columns are what the migrations made, so a field added to the table without a migration
 * must fail to compile where events-repository.ts selects the fields, not fail in SQL.
 */
export interface EventsTable {
  id: Generated<number>;
  account_id: string;
  event_uuid: string;
  app_name: string;
  app_version: string;
  event_timestamp: string;
  created_by_node_id: string;
  collected_method: string;
  transport_type: string;
  source_ip: string;
  destination_ip: string;
  called_number: string;
  sip_method: string;
  sip_user_agent: string;
  sip_message: string;
  /** Normalised instant, `YYYY-MM-DDTHH:MM:SS.fffffffffZ`: sorts as text, keeps nanoseconds. */
  event_time: string;
  number_key: string | null;
  number_written: string | null;
  content_hash: string;
  received_at: string;
}

/** Aggregates are kept per scope: an account id, or the shared data set (SHARED_SCOPE). */
export interface NumberStatsTable {
  scope: string;
  number_key: string;
  seen_count: Counter;
  first_seen: string;
  last_seen: string;
  source_ip_count: Counter;
}

export interface NumberMethodsTable {
  scope: string;
  number_key: string;
  sip_method: string;
  count: Counter;
}

export interface NumberFormsTable {
  scope: string;
  number_key: string;
  written: string;
  count: Counter;
}

export interface NumberSourcesTable {
  scope: string;
  number_key: string;
  source_ip: string;
}

export interface IpStatsTable {
  scope: string;
  source_ip: string;
  seen_count: Counter;
  first_seen: string;
  last_seen: string;
  called_number_count: Counter;
}

export interface IpUserAgentsTable {
  scope: string;
  source_ip: string;
  user_agent: string;
  count: Counter;
}

export interface IpTransportsTable {
  scope: string;
  source_ip: string;
  transport: string;
  count: Counter;
}

export interface IpNumbersTable {
  scope: string;
  source_ip: string;
  number_key: string;
}




export interface PlansTable {
  name: string;
  may_submit: number;
  lookups_limit: number;
  lookups_window: number;
  submissions_limit: number | null;
  submissions_window: number | null;
  max_clients: number | null;
  event_reads_limit: number;
  event_reads_window: number;
}

export interface AuditLogTable {
  id: Generated<number>;
  at: string;
  action: string;
  actor: string;
  account_id: string | null;
  client_id: string | null;
  ip: string | null;
  /** JSON object with the action's particulars; never a secret. */
  detail: string | null;
}

/** Every (account, uuid) stored, for replay and conflict detection across all partitions. */
export interface EventIdsTable {
  account_id: string;
  event_uuid: string;
  content_hash: string;
  event_time: string;
}

/** Secrets every instance shares (the events cursor key), made once by a migration. */
export interface ServerSecretsTable {
  name: string;
  /** The secret's bytes in base64, sealed with the key secret (src/domain/key-sealing.ts). */
  value: string;
}

/** Node ingest URLs (docs/api.md §11); a revoked one keeps its row, with `revoked_at` set. */
export interface IngestUrlsTable {
  id: string;
  account_id: string;
  name: string;
  /** SHA-256 (hex) of the secret in the URL's path; the secret itself is never stored. */
  secret_hash: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

import type { ColumnType, Generated } from 'kysely';
import type { StoredAttempt } from '../domain/accounts/oidc-sign-in.ts';

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
  number_aggregates: NumberAggregatesTable;
  number_sources: NumberSourcesTable;
  ip_aggregates: IpAggregatesTable;
  ip_numbers: IpNumbersTable;
  number_hashes: NumberHashesTable;
  range_aggregates: RangeAggregatesTable;
  range_sources: RangeSourcesTable;
  range_nodes: RangeNodesTable;
  node_names: NodeNamesTable;
  allowlist_entries: AllowlistEntriesTable;
  plans: PlansTable;
  audit_log: AuditLogTable;
  server_secrets: ServerSecretsTable;
  ingest_urls: IngestUrlsTable;
  users: UsersTable;
  user_invitations: UserInvitationsTable;
  invitation_stand_ins: InvitationStandInsTable;
  user_sessions: UserSessionsTable;
  fold_state: FoldStateTable;
  integrations: IntegrationsTable;
  alerts: AlertsTable;
  alert_deliveries: AlertDeliveriesTable;
  delivery_attempts: DeliveryAttemptsTable;
  taxii_objects: TaxiiObjectsTable;
  taxii_versions: TaxiiVersionsTable;
  taxii_publication: TaxiiPublicationTable;
  shared_changes: SharedChangesTable;
  value_reports: ValueReportsTable;
  peers: PeersTable;
  peer_positions: PeerPositionsTable;
  peer_indicators: PeerIndicatorsTable;
  oidc_identities: OidcIdentitiesTable;
  oidc_attempts: OidcAttemptsTable;
  user_two_factor: UserTwoFactorTable;
  user_recovery_codes: UserRecoveryCodesTable;
  pending_sign_ins: PendingSignInsTable;
  account_two_factor_requirements: AccountTwoFactorRequirementsTable;
  sign_ups: SignUpsTable;
  contributor_requests: ContributorRequestsTable;
  board_aliases: BoardAliasesTable;
}

/** How far a derived table has folded the events in: every event id up to `through` is counted. */
export interface FoldStateTable {
  name: string;
  through: Counter;
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
  /** When closing began (migration 035): the account refuses everything and is being erased; NULL while open. */
  closing_at: ColumnType<string | null, string | null | undefined, string | null>;
  /** JSON: rows erased so far per table, for the closing's audit entry (migration 035). */
  closing_counts: ColumnType<string | null, string | null | undefined, string | null>;
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
  /** When a token was last issued to the client (migration 011); NULL if never. */
  last_used_at: ColumnType<string | null, string | null | undefined, string | null>;
  /** The address that token was asked for from (migration 017); NULL if never, or not told. */
  last_token_address: ColumnType<string | null, string | null | undefined, string | null>;
  /** When the client last called the API, and from where (migration 017), as flushed by domain/accounts/client-activity.ts. */
  last_call_at: ColumnType<string | null, string | null | undefined, string | null>;
  last_call_address: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface SigningKeysTable {
  kid: string;
  alg: string;
  /** The private JWK, sealed with the key secret (src/domain/accounts/key-sealing.ts). */
  private_jwk: string;
  public_jwk: string;
  created_at: string;
  /** 1 on the one key that signs new tokens, NULL on the others; unique (migration 009). */
  current_key: 1 | null;
  /** When the key stops verifying and leaves the JWKS (ISO 8601); NULL while it is current. */
  retires_at: string | null;
}

/**
 * One text column per event field (src/domain/events/event-fields.ts), written out rather than derived:
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

/**
 * Aggregates are kept per scope: an account id, or the shared data set (SHARED_SCOPE). One row
 * per scope and key, its named counts inside as JSON objects of at most KEPT_NAMES names
 * (src/domain/lookups/kept-counts.ts).
 */
export interface NumberAggregatesTable {
  scope: string;
  number_key: string;
  seen_count: Counter;
  first_seen: string;
  last_seen: string;
  source_ip_count: Counter;
  /** `{"INVITE":3,…}` */
  sip_methods: string;
  /** Written forms and how often each was seen: `{"0046…":2,"+46…":1}` */
  forms: string;
  /** Honeypot nodes (created_by_node_id) and their events (migration 013). */
  nodes: ColumnType<string, string | undefined, string>;
  /** When the fold first made the row (a STIX object's `created`); NULL before migration 018: first_seen stands in. */
  published_at: ColumnType<string | null, string | null | undefined, string | null>;
  /** When the fold last changed the row (a STIX object's `modified`); NULL before migration 018: last_seen stands in. */
  changed_at: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface IpAggregatesTable {
  scope: string;
  source_ip: string;
  seen_count: Counter;
  first_seen: string;
  last_seen: string;
  called_number_count: Counter;
  /** User agents (their first USER_AGENT_KEPT_CHARACTERS characters) and counts. */
  user_agents: string;
  /** `{"UDP":4,…}` */
  transports: string;
  /** Honeypot nodes (created_by_node_id) and their events (migration 013). */
  nodes: ColumnType<string, string | undefined, string>;
  /** When the fold first made the row (a STIX object's `created`); NULL before migration 018: first_seen stands in. */
  published_at: ColumnType<string | null, string | null | undefined, string | null>;
  /** When the fold last changed the row (a STIX object's `modified`); NULL before migration 018: last_seen stands in. */
  changed_at: ColumnType<string | null, string | null | undefined, string | null>;
}

/** The SHA-256 (lower-case hex) of each number key per scope, for range lookups (docs/api.md §13). */
export interface NumberHashesTable {
  scope: string;
  number_hash: string;
  number_key: string;
}

/** Distinct (scope, number, source address) triples, for exact distinct counts. */
export interface NumberSourcesTable {
  scope: string;
  number_key: string;
  source_ip: string;
}

/**
 * One row per scope and number range (src/domain/number-range.ts; migration 027): what the fold
 * counted of the events to the range's numbers. Every count but `seen_count` and
 * `invite_count` is a distinct count, exact: numbers from the scope's number rows, sources and
 * nodes from the two sets below.
 */
export interface RangeAggregatesTable {
  scope: string;
  range_prefix: string;
  seen_count: Counter;
  first_seen: string;
  last_seen: string;
  /** Distinct numbers of the range seen (each has a number_aggregates row in the scope). */
  number_count: Counter;
  source_ip_count: Counter;
  node_count: Counter;
  invite_count: Counter;
}

/** Distinct (scope, range, source address) triples. */
export interface RangeSourcesTable {
  scope: string;
  range_prefix: string;
  source_ip: string;
}

/** Distinct (scope, range, honeypot node) triples. */
export interface RangeNodesTable {
  scope: string;
  range_prefix: string;
  node_id: string;
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

/**
 * Every (account, uuid) stored, for replay and conflict detection across all partitions: on
 * PostgreSQL only, whose partitioned events table cannot hold that unique key itself.
 */
export interface EventIdsTable {
  account_id: string;
  event_uuid: string;
  content_hash: string;
  event_time: string;
}

/** Secrets every instance shares (the events cursor key), made once by a migration. */
export interface ServerSecretsTable {
  name: string;
  /** The secret's bytes in base64, sealed with the key secret (src/domain/accounts/key-sealing.ts). */
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

/** Dashboard users (migration 011); operators have no account. */
export interface UsersTable {
  user_id: string;
  account_id: string | null;
  /** Lower-cased, unique. */
  email: string;
  role: string;
  /** `scrypt$N$r$p$salt$key` (src/domain/accounts/passwords.ts); NULL until an invitation is used. */
  password_hash: string | null;
  disabled: Flag;
  created_at: string;
}

/**
 * An owner's invitation of an address a user elsewhere has (migration 025): listed as invited in
 * the owner's account, like any invitation, and nothing more.
 */
export interface InvitationStandInsTable {
  user_id: string;
  account_id: string;
  email: string;
  role: string;
  disabled: Flag;
  created_at: string;
}

/** One-time links to set a password; only the token's SHA-256 hash is stored. */
export interface UserInvitationsTable {
  token_hash: string;
  user_id: string;
  purpose: string;
  created_at: string;
  expires_at: string;
  used_at: string | null;
}

/** Dashboard sessions by the SHA-256 hash of their id (src/domain/accounts/sessions.ts). */
export interface UserSessionsTable {
  id_hash: string;
  user_id: string;
  created_at: string;
  last_seen_at: string;
  expires_at: string;
  /** What the next page shows once (a new secret), sealed; cleared by that view (migration 015). */
  held_view: ColumnType<string | null, string | null | undefined, string | null>;
  held_at: ColumnType<string | null, string | null | undefined, string | null>;
}

/** The names accounts give their nodes (migration 016). */
/** One entry of an allowlist (migration 028): `owner` is an account id, or `operator` for the operator's list. */
export interface AllowlistEntriesTable {
  id: string;
  owner: string;
  kind: string;
  value: string;
  note: string | null;
  added_by: string;
  added_at: string;
}

export interface NodeNamesTable {
  account_id: string;
  node_id: string;
  name: string;
  named_at: string;
}

/** Where an account's alerts go (docs/api.md §12). */
export interface IntegrationsTable {
  id: string;
  account_id: string;
  /** `webhook`, `slack` or `email`. */
  kind: string;
  name: string;
  /** The URL, or the email address. */
  target: string;
  /** A webhook's signing secret, sealed with the key secret; NULL for other kinds. */
  secret: string | null;
  /** Space-separated alert types. */
  alert_types: string;
  created_at: string;
  /** When the owner confirmed an email address; set at creation for the other kinds. */
  confirmed_at: string | null;
  /** SHA-256 (hex) of the confirmation token while one is outstanding. */
  confirm_hash: string | null;
  confirm_expires_at: string | null;
  /** When it was disabled (a day of failed deliveries, or its owner); NULL while enabled. */
  disabled_at: string | null;
  disabled_reason: string | null;
  /** A rotated-out webhook secret, sealed, still signing beside `secret` until `previous_secret_until`. */
  previous_secret: string | null;
  previous_secret_until: string | null;
  /** Alerts that carry a score are sent only at or above it. */
  min_score: Generated<number>;
}

/** The outbox's first stage: one row per alert (src/store/repositories/alert-outbox-writes.ts). */
export interface AlertsTable {
  id: string;
  account_id: string;
  type: string;
  subject: string;
  dedup_key: string;
  /** JSON: the payload's `data`. */
  data: string;
  created_at: string;
  integration_id: string | null;
  state: string;
  claimed_until: string | null;
}

/** The outbox's second stage: one alert to one integration. */
export interface AlertDeliveriesTable {
  id: string;
  alert_id: string;
  integration_id: string;
  account_id: string;
  /** `pending`, `delivered` or `failed` (given up). */
  status: string;
  attempts: number;
  next_attempt_at: string;
  claimed_until: string | null;
  created_at: string;
}

/** One delivery attempt, as the owner's delivery log shows it. */
export interface DeliveryAttemptsTable {
  id: Generated<number>;
  delivery_id: string;
  integration_id: string;
  attempt: number;
  at: string;
  duration_ms: number;
  status_code: number | null;
  error: string | null;
  outcome: string;
}

/** A TAXII object's present state, per collection and value (migration 019, docs/taxii.md). */
export interface TaxiiObjectsTable {
  collection: string;
  value: string;
  generation: number;
  object_id: string;
  created: string;
  modified: string;
  revoked: number;
  fingerprint: string;
}

/** Every version a TAXII collection serves; `added_ms` is its date_added in milliseconds, unique. */
export interface TaxiiVersionsTable {
  added_ms: Counter;
  collection: string;
  object_id: string;
  modified: string;
  latest: number;
  body: string;
}

/** Where a collection's publisher stands, and who holds its lease. */
export interface TaxiiPublicationTable {
  collection: string;
  fold_seen: string | null;
  changed_through: string | null;
  swept_hour: string | null;
  holder: string | null;
  lease_until: string | null;
  /** A first pass under way (migration 023): the page to read next, the latest change as it began, its hour. */
  first_pass_next: string | null;
  first_pass_through: string | null;
  first_pass_hour: string | null;
  /** Where it stands in what peers said (migration 034): `peer_indicators.seq` read through, the peers' settings applied, ends applied through. */
  peers_seq: string | null;
  peers_signature: string | null;
  peers_checked: string | null;
}

/**
 * The shared data set's aggregate rows as each write changed them (migration 024): appended, one
 * entry per row and write, with the row's new `changed_at`. An entry whose row has a later
 * `changed_at` is stale; the TAXII publisher skips those and deletes what it has read past.
 */
export interface SharedChangesTable {
  /** The table of the row: `number_aggregates`, `ip_aggregates` or `range_aggregates`. */
  aggregates: string;
  /** The row's `changed_at` as this write set it (a range row's: the instant of the fold step or rebuild). */
  changed: string;
  key: string;
}

/** False-positive reports (migration 029): `kind` `number` or `ip`, `state` `pending`, `accepted` or `rejected`. */
export interface ValueReportsTable {
  id: string;
  account_id: string;
  kind: string;
  value: string;
  reason: string;
  note: string | null;
  state: string;
  created_at: string;
  decided_at: string | null;
  decision_note: string | null;
}

/** Federation peers (migration 030, docs/federation.md): other TAXII 2.1 servers read by this one. */
export interface PeersTable {
  peer_id: string;
  name: string;
  api_root: string;
  /** JSON array of collection ids. */
  collections: string;
  /** `none`, `basic` or `bearer`. */
  auth: string;
  username: string | null;
  /** The Basic password or bearer token, sealed with the key secret. */
  credential: string | null;
  trust: number;
  poll_seconds: number;
  republish: number;
  enabled: number;
  created_at: string;
  holder: string | null;
  lease_until: string | null;
  next_poll_at: string | null;
  failures: Generated<number>;
  last_success_at: string | null;
  last_error: string | null;
  last_error_at: string | null;
  objects_read: Generated<number | string>;
  objects_accepted: Generated<number | string>;
  objects_skipped: Generated<number | string>;
  objects_refused: Generated<number | string>;
}

/** Where reading a peer's collection stands (migration 030). */
export interface PeerPositionsTable {
  peer_id: string;
  collection_id: string;
  added_after: string | null;
  next_page: string | null;
  /** The X-TAXII-Date-Added-Last of the last page written (migration 036), where a forgotten `next` resumes. */
  written_through: string | null;
}

/** The latest version of each indicator a peer published that this server understood (migration 030). */
export interface PeerIndicatorsTable {
  peer_id: string;
  object_id: string;
  /** `number` or `ip`. */
  kind: string;
  value: string;
  confidence: number;
  valid_from: string;
  modified: string;
  valid_until: string | null;
  revoked: number;
  /** `clear`, `green`, `amber`, `amber+strict` or `red`; null when unmarked. */
  tlp: string | null;
  /** Grows with every write across all peers: servers read the rows written since their last read. */
  seq: number | string;
}

/** Which person at which OpenID provider is which user (migration 033). */
export interface OidcIdentitiesTable {
  issuer: string;
  subject: string;
  user_id: string;
  created_at: string;
}

/** Single sign-on attempts on their way through the provider, taken once (migration 033); `state` only as its SHA-256. */
export type OidcAttemptsTable = StoredAttempt;
/** A user's TOTP enrolment (migration 031): the secret sealed, never in the clear. */
export interface UserTwoFactorTable {
  user_id: string;
  /** `sealed:v1:…` (src/domain/accounts/key-sealing.ts), for `user_two_factor/<user_id>`. */
  secret: string;
  /** NULL while the first code is awaited. */
  enrolled_at: string | null;
  /** The RFC 6238 time step of the last code accepted. */
  last_step: ColumnType<number | string | null, number | null, number | null>;
  created_at: string;
}

/** Single-use recovery codes: only each code's SHA-256 hash. */
export interface UserRecoveryCodesTable {
  user_id: string;
  code_hash: string;
  created_at: string;
  used_at: string | null;
}

/** Sign-ins whose password was right and whose second step is awaited; only the token's hash. */
export interface PendingSignInsTable {
  token_hash: string;
  method: string;
  user_id: string;
  next: string;
  created_at: string;
  expires_at: string;
}

/** Accounts whose owners require two-factor sign-in of every user. */
export interface AccountTwoFactorRequirementsTable {
  account_id: string;
  required_at: string;
  required_by: string;
}

/** Sign-ups waiting for their mailed link (migration 032): the token's hash, the password's. */
export interface SignUpsTable {
  token_hash: string;
  email: string;
  account_name: string;
  password_hash: string;
  ip: string;
  created_at: string;
  expires_at: string;
  used_at: string | null;
}

/** Requests for the contributor plan (migration 032). */
export interface ContributorRequestsTable {
  request_id: string;
  account_id: string;
  user_id: string;
  honeypots: string;
  status: 'open' | 'approved' | 'declined';
  reason: string | null;
  created_at: string;
  decided_at: string | null;
  decided_by: string | null;
}

/** The contributors' board's opt-ins (migration 032): an account's public alias. */
export interface BoardAliasesTable {
  account_id: string;
  alias: string;
  alias_key: string;
  created_at: string;
}

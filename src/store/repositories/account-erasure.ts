import { sql, type Kysely, type RawBuilder, type Transaction } from 'kysely';
import { tryAdvisoryLock } from '../advisory-locks.ts';
import type { DialectCapabilities } from '../dialect.ts';
import { refoldSome } from '../fold/aggregate-fold.ts';
import type { ClosingProgress, ClosingRecord, ErasedBatch, AccountErasureStore } from '../../domain/accounts/account-closing.ts';
import type { Schema } from '../schema.ts';
import { ofAccount, ofIntegrations, ofUsers } from './account-rows.ts';

/** Rows deleted per statement: short transactions that never hold intake or the fold up for long. */
export const ERASE_BATCH = 2000;

/**
 * How one table's rows of a closing account are found. `rows` is the condition naming them
 * (its SQL may refer to the account id only through `id`); `key` the columns that tell its rows
 * apart, by which a batch is deleted.
 */
interface Erasure {
  table: string;
  key: string[];
  rows: (id: string) => RawBuilder<unknown>;
  /** Aggregate rows: deleted with the fold held off, as a rebuild (every process forgets what it keeps of them). */
  aggregates?: true;
  /** Present only where the store has this capability (event_ids: PostgreSQL's partitioned events). */
  only?: keyof DialectCapabilities;
}

const scoped = (table: string, key: string[]): Erasure => ({ table, key, rows: ofAccount('scope'), aggregates: true });

/**
 * THE list of what closing an account erases, table by table, in the order it is erased (a
 * table before those its rows refer to; the account's events before its aggregates, so no fold
 * step can count an event again into a scope already erased). A table added to the store gets
 * a line here or in TABLES_WITHOUT_ACCOUNT_DATA: test/store/account-erase.test.ts reads every
 * table from the database's catalog and fails on one in neither.
 */
export const ACCOUNT_ERASURE: readonly Erasure[] = [
  { table: 'user_sessions', key: ['id_hash'], rows: ofUsers },
  { table: 'user_invitations', key: ['token_hash'], rows: ofUsers },
  // Its own invitations of others' addresses, and others' invitations of its users' addresses.
  { table: 'invitation_stand_ins', key: ['user_id'], rows: (id) => sql`account_id = ${id} or email in (select email from users where account_id = ${id})` },
  // Its users' ways in: second steps under way, two-factor enrolments and recovery codes, their
  // links to an OpenID provider; and a sign-up waiting under one of their addresses.
  { table: 'pending_sign_ins', key: ['token_hash'], rows: ofUsers },
  { table: 'user_recovery_codes', key: ['user_id', 'code_hash'], rows: ofUsers },
  { table: 'user_two_factor', key: ['user_id'], rows: ofUsers },
  { table: 'oidc_identities', key: ['issuer', 'subject'], rows: ofUsers },
  { table: 'sign_ups', key: ['token_hash'], rows: (id) => sql`email in (select email from users where account_id = ${id})` },
  { table: 'account_two_factor_requirements', key: ['account_id'], rows: ofAccount('account_id') },
  { table: 'contributor_requests', key: ['request_id'], rows: ofAccount('account_id') },
  { table: 'board_aliases', key: ['account_id'], rows: ofAccount('account_id') },
  { table: 'events', key: ['id'], rows: ofAccount('account_id') },
  { table: 'event_ids', key: ['account_id', 'event_uuid'], rows: ofAccount('account_id'), only: 'partitionedEvents' },
  scoped('number_aggregates', ['number_key']),
  scoped('number_sources', ['number_key', 'source_ip']),
  scoped('number_hashes', ['number_hash', 'number_key']),
  scoped('ip_aggregates', ['source_ip']),
  scoped('ip_numbers', ['source_ip', 'number_key']),
  scoped('range_aggregates', ['range_prefix']),
  scoped('range_sources', ['range_prefix', 'source_ip']),
  scoped('range_nodes', ['range_prefix', 'node_id']),
  { table: 'delivery_attempts', key: ['id'], rows: ofIntegrations },
  { table: 'alert_deliveries', key: ['id'], rows: ofAccount('account_id') },
  { table: 'alerts', key: ['id'], rows: ofAccount('account_id') },
  { table: 'integrations', key: ['id'], rows: ofAccount('account_id') },
  { table: 'ingest_urls', key: ['id'], rows: ofAccount('account_id') },
  { table: 'node_names', key: ['node_id'], rows: ofAccount('account_id') },
  { table: 'allowlist_entries', key: ['id'], rows: ofAccount('owner') },
  { table: 'value_reports', key: ['id'], rows: ofAccount('account_id') },
  // Its audit trail: rows about it, its clients, by its users, and any naming a user's address
  // (a failed sign-in's). The one row that stays is the closing's own, written after.
  {
    table: 'audit_log',
    key: ['id'],
    rows: (id) => sql`account_id = ${id}
      or client_id in (select client_id from clients where account_id = ${id})
      or actor in (select 'user:' || user_id from users where account_id = ${id})
      or actor in (select 'client:' || client_id from clients where account_id = ${id})
      or exists (select 1 from users u where u.account_id = ${id} and audit_log.detail like '%' || replace(replace(replace(u.email, '!', '!!'), '%', '!%'), '_', '!_') || '%' escape '!')`,
  },
  { table: 'clients', key: ['client_id'], rows: ofAccount('account_id') },
  { table: 'users', key: ['user_id'], rows: ofAccount('account_id') },
  // Last, with the closing's audit entry: the account row is the mark a restart finishes from.
  { table: 'accounts', key: ['account_id'], rows: ofAccount('account_id') },
];

/**
 * Tables that hold no account's data, and why. Aggregates of the shared data set count trusted
 * accounts' events without saying whose, and stay as they are when one of them closes.
 */
export const TABLES_WITHOUT_ACCOUNT_DATA: Readonly<Record<string, string>> = {
  plans: 'plan definitions',
  signing_keys: "the server's token signing keys",
  server_secrets: "the server's own secrets",
  fold_state: "the aggregate fold's position",
  taxii_objects: 'the shared data set as published over TAXII',
  taxii_versions: 'the shared data set as published over TAXII',
  taxii_publication: "the TAXII publisher's position",
  shared_changes: "the shared data set's changes, for the TAXII publisher",
  peers: 'federation peers, set by the operator',
  peer_positions: 'where reading each peer stands',
  peer_indicators: "indicators peers published",
  oidc_attempts: 'single sign-on attempts on their way through the provider: no user yet, gone in 10 minutes',
  access_version: 'a counter of access changes (SQLite)',
  kysely_migration: 'the migrations run',
  kysely_migration_lock: 'the migrations lock',
};

/** The table a store's catalog name belongs to: the events table's monthly partitions (PostgreSQL) are its. */
export function tableOfCatalogName(name: string): string {
  return /^events_(default|\d{4}_\d{2})$/.test(name) ? 'events' : name;
}

interface ClosingState {
  by: string;
  erased: Record<string, number>;
}

/** Closing accounts in the SQL store: the mark, the erasure in batches, the last step. */
export class SqlAccountErasure implements AccountErasureStore {
  private readonly db: Kysely<Schema>;
  private readonly caps: DialectCapabilities;

  constructor(db: Kysely<Schema>, caps: DialectCapabilities) {
    this.db = db;
    this.caps = caps;
  }

  async beginClosing(accountId: string, by: string, at: string): Promise<boolean> {
    // One transaction: refused everywhere (disabled, every token's version raised, every session
    // ended) exactly when marked closing, so no crash leaves it half open.
    return this.db.transaction().execute(async (trx) => {
      const state: ClosingState = { by, erased: {} };
      const marked = await trx
        .updateTable('accounts')
        .set({ disabled: 1, closing_at: at, closing_counts: JSON.stringify(state) })
        .where('account_id', '=', accountId)
        .where('closing_at', 'is', null)
        .executeTakeFirst();
      if (marked.numUpdatedRows === 0n) return false;
      await trx.updateTable('clients').set((eb) => ({ secret_version: eb('secret_version', '+', 1) })).where('account_id', '=', accountId).execute();
      // Signed out, and no second step under way can end in a session.
      for (const table of ['user_sessions', 'pending_sign_ins'] as const) {
        await trx.deleteFrom(table).where('user_id', 'in', (eb) => eb.selectFrom('users').select('user_id').where('account_id', '=', accountId)).execute();
      }
      return true;
    });
  }

  async closingAccounts(): Promise<string[]> {
    const rows = await this.db.selectFrom('accounts').select('account_id').where('closing_at', 'is not', null).orderBy('closing_at').execute();
    return rows.map((row) => row.account_id);
  }

  async eraseBatch(accountId: string): Promise<ErasedBatch> {
    // Only a marked account is erased: the mark, once set, goes only with the account row.
    const marked = await this.db.selectFrom('accounts').select('closing_at').where('account_id', '=', accountId).executeTakeFirst();
    if (!marked?.closing_at) return 'done';
    for (const erasure of this.erasures()) {
      const result = await this.db.transaction().execute(async (trx) => {
        if (!(await tryAdvisoryLock(trx, this.caps, 'accountClosing'))) return 'busy' as const;
        let rows = 0;
        const remove = async () => {
          rows = await deleteBatch(trx, erasure, accountId);
        };
        if (erasure.aggregates) await refoldSome(trx, this.caps, remove);
        else await remove();
        if (rows > 0) await this.count(trx, accountId, erasure.table, rows);
        return rows;
      });
      if (result === 'busy') return 'busy';
      if (result > 0) return { table: erasure.table, rows: result };
    }
    return 'done';
  }

  async finish(accountId: string): Promise<ClosingRecord | 'again' | undefined> {
    return this.db.transaction().execute(async (trx) => {
      if (!(await tryAdvisoryLock(trx, this.caps, 'accountClosing'))) return undefined;
      const row = await trx.selectFrom('accounts').select(['closing_at', 'closing_counts']).where('account_id', '=', accountId).executeTakeFirst();
      if (!row?.closing_at) return undefined;
      // A row written after its table's batches (an event already being stored when the account
      // was marked, a delivery attempt the alert worker was making) is erased by another round.
      for (const erasure of this.erasures()) {
        const { rows } = await sql`select 1 as one from ${sql.table(erasure.table)} where ${erasure.rows(accountId)} limit 1`.execute(trx);
        if (rows.length > 0) return 'again';
      }
      const state = JSON.parse(row.closing_counts ?? '{"by":"operator","erased":{}}') as ClosingState;
      await trx.deleteFrom('accounts').where('account_id', '=', accountId).execute();
      const record: ClosingRecord = { by: state.by, closingSince: row.closing_at, erased: state.erased };
      // In the same transaction as the account row's delete: the closing is audited exactly once.
      await trx
        .insertInto('audit_log')
        .values({ at: new Date().toISOString(), action: 'account.closed', actor: state.by, account_id: accountId, client_id: null, ip: null, detail: JSON.stringify({ closing_since: record.closingSince, erased: record.erased }) })
        .execute();
      return record;
    });
  }

  async progress(accountId: string): Promise<ClosingProgress | undefined> {
    const row = await this.db.selectFrom('accounts').select(['closing_at', 'closing_counts']).where('account_id', '=', accountId).executeTakeFirst();
    if (!row?.closing_at) return undefined;
    return { closingSince: row.closing_at, erased: (JSON.parse(row.closing_counts ?? '{"erased":{}}') as ClosingState).erased };
  }

  /** The erasures of every table this store has, but the account row's own. */
  private erasures(): Erasure[] {
    return ACCOUNT_ERASURE.filter((erasure) => erasure.table !== 'accounts' && !(erasure.only && !this.caps[erasure.only]));
  }

  private async count(trx: Transaction<Schema>, accountId: string, table: string, rows: number): Promise<void> {
    const row = await trx.selectFrom('accounts').select('closing_counts').where('account_id', '=', accountId).executeTakeFirst();
    const state = JSON.parse(row?.closing_counts ?? '{"by":"operator","erased":{}}') as ClosingState;
    state.erased[table] = (state.erased[table] ?? 0) + rows;
    await trx.updateTable('accounts').set({ closing_counts: JSON.stringify(state) }).where('account_id', '=', accountId).execute();
  }
}

/** Deletes up to ERASE_BATCH of the rows `erasure` names: by key, so each statement stays short on both stores. */
async function deleteBatch(trx: Transaction<Schema>, erasure: Erasure, accountId: string): Promise<number> {
  const table = sql.table(erasure.table);
  const key = sql.join(erasure.key.map((column) => sql.ref(column)));
  const rows = erasure.rows(accountId);
  const result = await sql`delete from ${table} where (${rows}) and (${key}) in (select ${key} from ${table} where ${rows} limit ${ERASE_BATCH})`.execute(trx);
  return Number(result.numAffectedRows ?? 0n);
}

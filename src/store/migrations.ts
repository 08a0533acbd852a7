import { randomBytes } from 'node:crypto';
import { sql, type CreateTableBuilder, type Kysely } from 'kysely';
import { Migrator, type Migration, type MigrationProvider, type MigrationResultSet } from 'kysely/migration';
import { CURSOR_KEY_BYTES } from '../domain/event-cursor.ts';
import { normalisePhoneNumber } from '../domain/phone-number.ts';
import { DEFAULT_PLANS } from '../domain/plans.ts';
import type { DialectCapabilities } from './dialect.ts';
import { ensurePartitions } from './partitions.ts';

/** Migrations in order; each is applied once and recorded in `kysely_migration`. */
function migrations(caps: DialectCapabilities): Record<string, Migration> {
  return {
    '001_initial': {
      async up(db: Kysely<any>) {
        await db.schema
          .createTable('accounts')
          .addColumn('account_id', 'text', (c) => c.primaryKey())
          .addColumn('name', 'text', (c) => c.notNull())
          .addColumn('plan', 'text', (c) => c.notNull())
          .addColumn('trusted', 'integer', (c) => c.notNull().defaultTo(0))
          .addColumn('disabled', 'integer', (c) => c.notNull().defaultTo(0))
          .addColumn('created_at', 'text', (c) => c.notNull())
          .execute();

        await db.schema
          .createTable('clients')
          .addColumn('client_id', 'text', (c) => c.primaryKey())
          .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.account_id'))
          .addColumn('name', 'text', (c) => c.notNull())
          .addColumn('permissions', 'text', (c) => c.notNull())
          .addColumn('secret_hash', 'text', (c) => c.notNull())
          .addColumn('secret_version', 'integer', (c) => c.notNull().defaultTo(1))
          .addColumn('created_at', 'text', (c) => c.notNull())
          .execute();
        await db.schema.createIndex('clients_by_account').on('clients').column('account_id').execute();

        await db.schema
          .createTable('signing_keys')
          .addColumn('kid', 'text', (c) => c.primaryKey())
          .addColumn('alg', 'text', (c) => c.notNull())
          .addColumn('private_jwk', 'text', (c) => c.notNull())
          .addColumn('public_jwk', 'text', (c) => c.notNull())
          .addColumn('created_at', 'text', (c) => c.notNull())
          .execute();

        let events: CreateTableBuilder<string, string> = db.schema.createTable('events');
        events = !caps.partitionedEvents
          ? events.addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement())
          : events.addColumn('id', 'bigserial', (c) => c.notNull());
        for (const column of [
          'account_id',
          'event_uuid',
          'app_name',
          'app_version',
          'event_timestamp',
          'created_by_node_id',
          'collected_method',
          'transport_type',
          'source_ip',
          'destination_ip',
          'called_number',
          'sip_method',
          'sip_user_agent',
          'sip_message',
          'event_time',
        ]) {
          events = events.addColumn(column, 'text', (c) => c.notNull());
        }
        events = events
          .addColumn('number_key', 'text')
          .addColumn('content_hash', 'text', (c) => c.notNull())
          .addColumn('received_at', 'text', (c) => c.notNull());
        // A partitioned table's keys must include the partition column, so on PostgreSQL
        // uniqueness per account lives in event_ids (migration 004) instead.
        await (caps.partitionedEvents
          ? events.addPrimaryKeyConstraint('events_pk', ['event_time', 'id']).modifyEnd(sql`partition by range (event_time)`)
          : events.addUniqueConstraint('events_account_uuid', ['account_id', 'event_uuid'])
        ).execute();
        if (caps.partitionedEvents) await ensurePartitions(db, new Date());
        // Own-event queries: newest first per account, and the filters of docs/api.md §8.
        await db.schema.createIndex('events_by_time').on('events').columns(['account_id', 'event_time', 'id']).execute();
        await db.schema
          .createIndex('events_by_number')
          .on('events')
          .columns(['account_id', 'number_key', 'event_time', 'id'])
          .execute();
        await db.schema
          .createIndex('events_by_source')
          .on('events')
          .columns(['account_id', 'source_ip', 'event_time', 'id'])
          .execute();
        await db.schema
          .createIndex('events_by_node')
          .on('events')
          .columns(['account_id', 'created_by_node_id', 'event_time', 'id'])
          .execute();

        const counter = caps.counterType;
        await db.schema
          .createTable('number_stats')
          .addColumn('scope', 'text', (c) => c.notNull())
          .addColumn('number_key', 'text', (c) => c.notNull())
          .addColumn('seen_count', counter, (c) => c.notNull())
          .addColumn('first_seen', 'text', (c) => c.notNull())
          .addColumn('last_seen', 'text', (c) => c.notNull())
          .addColumn('source_ip_count', counter, (c) => c.notNull())
          .addPrimaryKeyConstraint('number_stats_pk', ['scope', 'number_key'])
          .execute();
        await countTable(db, 'number_methods', ['scope', 'number_key', 'sip_method'], counter);
        await countTable(db, 'number_forms', ['scope', 'number_key', 'written'], counter);
        await setTable(db, 'number_sources', ['scope', 'number_key', 'source_ip']);

        await db.schema
          .createTable('ip_stats')
          .addColumn('scope', 'text', (c) => c.notNull())
          .addColumn('source_ip', 'text', (c) => c.notNull())
          .addColumn('seen_count', counter, (c) => c.notNull())
          .addColumn('first_seen', 'text', (c) => c.notNull())
          .addColumn('last_seen', 'text', (c) => c.notNull())
          .addColumn('called_number_count', counter, (c) => c.notNull())
          .addPrimaryKeyConstraint('ip_stats_pk', ['scope', 'source_ip'])
          .execute();
        await countTable(db, 'ip_user_agents', ['scope', 'source_ip', 'user_agent'], counter);
        await countTable(db, 'ip_transports', ['scope', 'source_ip', 'transport'], counter);
        await setTable(db, 'ip_numbers', ['scope', 'source_ip', 'number_key']);
      },
    },
    '002_plans_and_audit': {
      async up(db: Kysely<any>) {
        // Plans live in the store so the operator can change them for every instance at once.
        await db.schema
          .createTable('plans')
          .addColumn('name', 'text', (c) => c.primaryKey())
          .addColumn('may_submit', 'integer', (c) => c.notNull())
          .addColumn('lookups_limit', 'integer', (c) => c.notNull())
          .addColumn('lookups_window', 'integer', (c) => c.notNull())
          .addColumn('submissions_limit', 'integer')
          .addColumn('submissions_window', 'integer')
          .addColumn('max_clients', 'integer')
          .execute();
        for (const plan of DEFAULT_PLANS) {
          await db
            .insertInto('plans')
            .values({
              name: plan.name,
              may_submit: plan.maySubmit ? 1 : 0,
              lookups_limit: plan.lookups.limit,
              lookups_window: plan.lookups.windowSeconds,
              submissions_limit: plan.submissions?.limit ?? null,
              submissions_window: plan.submissions?.windowSeconds ?? null,
              max_clients: plan.maxClients,
            })
            .execute();
        }

        let audit: CreateTableBuilder<string, string> = db.schema.createTable('audit_log');
        audit =
          caps.serialType === 'integer'
            ? audit.addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement())
            : audit.addColumn('id', 'bigserial', (c) => c.primaryKey());
        await audit
          .addColumn('at', 'text', (c) => c.notNull())
          .addColumn('action', 'text', (c) => c.notNull())
          .addColumn('actor', 'text', (c) => c.notNull())
          .addColumn('account_id', 'text')
          .addColumn('client_id', 'text')
          .addColumn('ip', 'text')
          .addColumn('detail', 'text')
          .execute();
        await db.schema.createIndex('audit_by_account').on('audit_log').columns(['account_id', 'at']).execute();
        await db.schema.createIndex('audit_by_time').on('audit_log').column('at').execute();
      },
    },
    '003_event_number_written': {
      async up(db: Kysely<any>) {
        // The written form of called_number, so aggregates can be rebuilt from events in SQL.
        await db.schema.alterTable('events').addColumn('number_written', 'text').execute();
        // Backfill in pages, in JavaScript, because normalisation is domain code.
        let after = 0;
        for (;;) {
          const rows: Array<{ id: number; called_number: string }> = await db
            .selectFrom('events')
            .select(['id', 'called_number'])
            .where('number_key', 'is not', null)
            .where('id', '>', after)
            .orderBy('id')
            .limit(5000)
            .execute();
          if (rows.length === 0) break;
          for (const row of rows) {
            const written = normalisePhoneNumber(row.called_number)?.written ?? null;
            await db.updateTable('events').set({ number_written: written }).where('id', '=', row.id).execute();
          }
          after = Number(rows.at(-1)!.id);
        }
      },
    },
    '004_event_ids': {
      async up(db: Kysely<any>) {
        // Every (account, uuid) ever stored, with its content hash: the one place intake asks
        // "new, replay or conflict?", unpartitioned so it holds across all months.
        await db.schema
          .createTable('event_ids')
          .addColumn('account_id', 'text', (c) => c.notNull())
          .addColumn('event_uuid', 'text', (c) => c.notNull())
          .addColumn('content_hash', 'text', (c) => c.notNull())
          .addColumn('event_time', 'text', (c) => c.notNull())
          .addPrimaryKeyConstraint('event_ids_pk', ['account_id', 'event_uuid'])
          .execute();
        await db.schema.createIndex('event_ids_by_time').on('event_ids').column('event_time').execute();
        await sql`insert into event_ids (account_id, event_uuid, content_hash, event_time)
                  select account_id, event_uuid, content_hash, event_time from events`.execute(db);
        if (caps.partitionedEvents) {
          await db.schema.createIndex('events_by_uuid').on('events').columns(['account_id', 'event_uuid']).execute();
        }
      },
    },
    '005_server_secrets': {
      async up(db: Kysely<any>) {
        // Secrets every instance must share, made once, here. Migrations run one at a time
        // (Kysely's lock on PostgreSQL), so instances starting together read one key. On
        // SQLite the lock is a no-op and DDL is not transactional: two processes may both run
        // this, so it is idempotent and the first key written is the one kept.
        await db.schema
          .createTable('server_secrets')
          .ifNotExists()
          .addColumn('name', 'text', (c) => c.primaryKey())
          .addColumn('value', 'text', (c) => c.notNull())
          .execute();
        await db
          .insertInto('server_secrets')
          .values({ name: 'cursor', value: randomBytes(CURSOR_KEY_BYTES).toString('base64') })
          .onConflict((oc) => oc.column('name').doNothing())
          .execute();
      },
    },
    '006_ingest_urls': {
      async up(db: Kysely<any>) {
        // Node ingest URLs (docs/api.md §11). Revocation keeps the row (revoked_at) rather than
        // deleting it: the owner's list shows what was revoked and when, and a node still
        // posting to a revoked URL is audited against its account, though answered as unknown.
        await db.schema
          .createTable('ingest_urls')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.account_id'))
          .addColumn('name', 'text', (c) => c.notNull())
          .addColumn('secret_hash', 'text', (c) => c.notNull())
          .addColumn('created_at', 'text', (c) => c.notNull())
          .addColumn('last_used_at', 'text')
          .addColumn('revoked_at', 'text')
          .execute();
        // Every request finds its URL by the secret's hash.
        await db.schema.createIndex('ingest_urls_by_secret').unique().on('ingest_urls').column('secret_hash').execute();
        await db.schema.createIndex('ingest_urls_by_account').on('ingest_urls').columns(['account_id', 'created_at']).execute();
      },
    },
    '007_audit_by_action': {
      async up(db: Kysely<any>) {
        // The failure-row cap (src/store/audit-retention.ts) finds the newest rows of a few
        // actions: by this index, in the rows it keeps, not by scanning every row of the log.
        await db.schema.createIndex('audit_by_action').ifNotExists().on('audit_log').columns(['action', 'id']).execute();
      },
    },
    '008_event_read_limits': {
      async up(db: Kysely<any>) {
        // Reads of one's own events get an allowance of their own (docs/api.md §9): a page can
        // be 1,000 events of up to 128 KiB, so unmetered reads were the cheapest way to load the
        // server. Existing plans get what their namesakes among the defaults have, others 3,600
        // an hour; a plan's lookups allowance says nothing about how heavy a page of events is.
        await db.schema.alterTable('plans').addColumn('event_reads_limit', 'integer', (c) => c.notNull().defaultTo(3600)).execute();
        await db.schema.alterTable('plans').addColumn('event_reads_window', 'integer', (c) => c.notNull().defaultTo(3600)).execute();
        const defaults: Record<string, { limit: number; windowSeconds: number }> = {
          tester: { limit: 60, windowSeconds: 3600 },
          contributor: { limit: 3600, windowSeconds: 3600 },
          business: { limit: 60, windowSeconds: 60 },
          service_provider: { limit: 60, windowSeconds: 60 },
        };
        for (const [name, window] of Object.entries(defaults)) {
          await db
            .updateTable('plans')
            .set({ event_reads_limit: window.limit, event_reads_window: window.windowSeconds })
            .where('name', '=', name)
            .execute();
        }
      },
    },
    '009_signing_key_rotation': {
      async up(db: Kysely<any>) {
        // One key signs: `current_key` is 1 on that row and NULL on every other, and unique, so
        // instances creating the first key together insert it if absent and exactly one wins
        // (NULLs never collide in a unique index, on SQLite or PostgreSQL). Before this, two
        // instances starting together on an empty database could each make a key of their own.
        await db.schema.alterTable('signing_keys').addColumn('current_key', 'integer').execute();
        // When a key stops verifying and leaves the JWKS; NULL while it may still sign.
        await db.schema.alterTable('signing_keys').addColumn('retires_at', 'text').execute();
        await db.schema.createIndex('signing_keys_one_current').unique().on('signing_keys').column('current_key').execute();
        const newest = await db.selectFrom('signing_keys').select('kid').orderBy('created_at', 'desc').orderBy('kid', 'desc').executeTakeFirst();
        if (!newest) return;
        // The newest key signed before, so it stays the signing key. Any older one (such a race
        // as above) may have signed a token moments ago: it verifies for the longest lifetime a
        // token may claim (31 days) and two minutes more, then retires. Written out: this
        // migration is history and must not follow later changes of that bound.
        const retiresAt = new Date(Date.now() + (31 * 86_400 + 120) * 1000).toISOString();
        await db.updateTable('signing_keys').set({ current_key: 1 }).where('kid', '=', newest.kid).execute();
        await db.updateTable('signing_keys').set({ retires_at: retiresAt }).where('kid', '<>', newest.kid).execute();
      },
    },
  };
}

/** A table counting occurrences of a key tuple. */
async function countTable(db: Kysely<any>, name: string, key: string[], counter: 'integer' | 'bigint') {
  let table: CreateTableBuilder<string, string> = db.schema.createTable(name);
  for (const column of key) table = table.addColumn(column, 'text', (c) => c.notNull());
  await table
    .addColumn('count', counter, (c) => c.notNull())
    .addPrimaryKeyConstraint(`${name}_pk`, key as never)
    .execute();
}

/** A table of distinct key tuples, for exact distinct counts kept at write time. */
async function setTable(db: Kysely<any>, name: string, key: string[]) {
  let table: CreateTableBuilder<string, string> = db.schema.createTable(name);
  for (const column of key) table = table.addColumn(column, 'text', (c) => c.notNull());
  await table.addPrimaryKeyConstraint(`${name}_pk`, key as never).execute();
}

/** Brings the schema up to date; refuses to run against a newer schema than this code knows. */
export async function migrateToLatest(db: Kysely<any>, caps: DialectCapabilities): Promise<void> {
  await migrate(db, caps, (migrator) => migrator.migrateToLatest());
}

/** Brings the schema up to the named migration and no further: for tests of a migration over the rows before it. */
export async function migrateUpTo(db: Kysely<any>, caps: DialectCapabilities, name: string): Promise<void> {
  await migrate(db, caps, (migrator) => migrator.migrateTo(name));
}

async function migrate(db: Kysely<any>, caps: DialectCapabilities, run: (migrator: Migrator) => Promise<MigrationResultSet>): Promise<void> {
  const all = migrations(caps);
  const provider: MigrationProvider = { getMigrations: async () => all };
  const migrator = new Migrator({ db, provider });
  const { error, results } = await run(migrator);
  if (error) {
    const failed = results?.find((r: { status: string }) => r.status === 'Error')?.migrationName ?? 'unknown';
    throw new Error(`database migration ${failed} failed: ${(error as Error).message ?? error}`);
  }
}

import { createHash, randomBytes } from 'node:crypto';
import { sql, type CreateTableBuilder, type Kysely, type RawBuilder } from 'kysely';
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
    '010_aggregate_fold': {
      async up(db: Kysely<any>) {
        // Lookup aggregates are folded in after intake commits (src/store/aggregate-fold.ts),
        // from the position kept here, in wider rows: one per scope and number and one per
        // scope and address, each with its named counts inside (at most 32 names per map), so
        // a fold writes two rows per event where it wrote six, and a lookup reads one per scope.
        // Migrations run in one transaction each, so on PostgreSQL (instances wait for the
        // migration lock) no event is stored meanwhile, and every event up to the newest id is
        // counted when the position is set.
        await db.schema
          .createTable('fold_state')
          .addColumn('name', 'text', (c) => c.primaryKey())
          .addColumn('through', caps.counterType, (c) => c.notNull())
          .execute();
        // The fold reads events in id order; SQLite's rowid is that order already.
        if (caps.partitionedEvents) await db.schema.createIndex('events_by_id').on('events').column('id').execute();
        // An unpartitioned events table tells new events from stored ones by its own unique
        // (account, uuid) index: there `event_ids` only doubled every event's identity writes.
        if (!caps.partitionedEvents) await db.schema.dropTable('event_ids').execute();

        for (const table of ['number_stats', 'number_methods', 'number_forms', 'number_sources', 'ip_stats', 'ip_user_agents', 'ip_transports', 'ip_numbers']) {
          await db.schema.dropTable(table).execute();
        }
        const counter = caps.counterType;
        const keyed = (name: string, table: CreateTableBuilder<string, string>, key: string[], small = false) => {
          const made = table.addPrimaryKeyConstraint(`${name}_pk`, key as never);
          // SQLite: a table of small rows keeps them in its key's B-tree, not in a rowid table
          // beside a key index. Not the wide rows: such a B-tree keeps only about a quarter of
          // a page per row inline (230 bytes at 1 KiB), and an address's user agents spill over.
          return small && caps.withoutRowid ? made.modifyEnd(sql`without rowid`) : made;
        };
        await keyed(
          'number_aggregates',
          db.schema
            .createTable('number_aggregates')
            .addColumn('scope', 'text', (c) => c.notNull())
            .addColumn('number_key', 'text', (c) => c.notNull())
            .addColumn('seen_count', counter, (c) => c.notNull())
            .addColumn('first_seen', 'text', (c) => c.notNull())
            .addColumn('last_seen', 'text', (c) => c.notNull())
            .addColumn('source_ip_count', counter, (c) => c.notNull())
            .addColumn('sip_methods', 'text', (c) => c.notNull())
            .addColumn('forms', 'text', (c) => c.notNull()),
          ['scope', 'number_key'],
        ).execute();
        await keyed(
          'ip_aggregates',
          db.schema
            .createTable('ip_aggregates')
            .addColumn('scope', 'text', (c) => c.notNull())
            .addColumn('source_ip', 'text', (c) => c.notNull())
            .addColumn('seen_count', counter, (c) => c.notNull())
            .addColumn('first_seen', 'text', (c) => c.notNull())
            .addColumn('last_seen', 'text', (c) => c.notNull())
            .addColumn('called_number_count', counter, (c) => c.notNull())
            .addColumn('user_agents', 'text', (c) => c.notNull())
            .addColumn('transports', 'text', (c) => c.notNull()),
          ['scope', 'source_ip'],
        ).execute();
        // The distinct sets, for exact distinct counts, as before.
        for (const [table, key] of [
          ['number_sources', ['scope', 'number_key', 'source_ip']],
          ['ip_numbers', ['scope', 'source_ip', 'number_key']],
        ] as const) {
          let made: CreateTableBuilder<string, string> = db.schema.createTable(table);
          for (const column of key) made = made.addColumn(column, 'text', (c) => c.notNull());
          await keyed(table, made, [...key], true).execute();
        }
        // The new rows recomputed from every stored event, here, before any server takes intake:
        // left to the fold, a big store's backlog would hold intake back for as long as it took.
        // Written out, not today's rebuild (src/store/aggregates-rebuild.ts): later migrations
        // change those tables, and this one must keep building them as they are here.
        const scoped = sql`(select case when a.trusted = 1 then '*shared*' else e.account_id end as scope, e.*
          from events e join accounts a on a.account_id = e.account_id)`;
        const numbered = sql`${scoped} s where number_key is not null`;
        const agent = sql`substr(sip_user_agent, 1, 256)`;
        const named = (from: RawBuilder<unknown>, key: RawBuilder<unknown>, name: RawBuilder<unknown>) =>
          sql`(select scope, k, cast(${sql.raw(caps.jsonObjectAgg)}(name, n) as text) as counts from (
              select scope, k, name, n, row_number() over (partition by scope, k order by n desc, name) as place
              from (select scope, ${key} as k, ${name} as name, count(*) as n from ${from} group by scope, ${key}, ${name}) c
            ) ranked where place <= 32 group by scope, k)`;
        await sql`insert into number_aggregates (scope, number_key, seen_count, first_seen, last_seen, source_ip_count, sip_methods, forms)
            select t.scope, t.k, t.n, t.first_seen, t.last_seen, t.d, m.counts, f.counts
            from (select scope, number_key as k, count(*) as n, min(event_time) as first_seen, max(event_time) as last_seen, count(distinct source_ip) as d
                  from ${numbered} group by scope, number_key) t
            join ${named(numbered, sql`number_key`, sql`sip_method`)} m on m.scope = t.scope and m.k = t.k
            join ${named(numbered, sql`number_key`, sql`coalesce(number_written, number_key)`)} f on f.scope = t.scope and f.k = t.k`.execute(db);
        await sql`insert into number_sources (scope, number_key, source_ip) select distinct scope, number_key, source_ip from ${numbered}`.execute(db);
        await sql`insert into ip_aggregates (scope, source_ip, seen_count, first_seen, last_seen, called_number_count, user_agents, transports)
            select t.scope, t.k, t.n, t.first_seen, t.last_seen, t.d, u.counts, r.counts
            from (select scope, source_ip as k, count(*) as n, min(event_time) as first_seen, max(event_time) as last_seen, count(distinct number_key) as d
                  from ${scoped} s group by scope, source_ip) t
            join ${named(sql`${scoped} s`, sql`source_ip`, agent)} u on u.scope = t.scope and u.k = t.k
            join ${named(sql`${scoped} s`, sql`source_ip`, sql`transport_type`)} r on r.scope = t.scope and r.k = t.k`.execute(db);
        await sql`insert into ip_numbers (scope, source_ip, number_key) select distinct scope, source_ip, number_key from ${numbered}`.execute(db);
        const newest = await db.selectFrom('events').select((eb) => eb.fn.max('id').as('newest')).executeTakeFirst();
        await db.insertInto('fold_state').values({ name: 'aggregates', through: Number(newest?.newest ?? 0) }).execute();
      },
    },
    '011_users_and_sessions': {
      async up(db: Kysely<any>) {
        // Dashboard users (docs/dashboard.md). Operators have no account, hence a nullable
        // account_id; emails are stored lower-cased, so a unique index makes them unique.
        await db.schema
          .createTable('users')
          .addColumn('user_id', 'text', (c) => c.primaryKey())
          .addColumn('account_id', 'text', (c) => c.references('accounts.account_id'))
          .addColumn('email', 'text', (c) => c.notNull())
          .addColumn('role', 'text', (c) => c.notNull())
          .addColumn('password_hash', 'text')
          .addColumn('disabled', 'integer', (c) => c.notNull().defaultTo(0))
          .addColumn('created_at', 'text', (c) => c.notNull())
          .execute();
        await db.schema.createIndex('users_by_email').unique().on('users').column('email').execute();
        await db.schema.createIndex('users_by_account').on('users').columns(['account_id', 'created_at']).execute();
        // One-time links to set a password: only the token's hash is kept; a used one keeps its row.
        await db.schema
          .createTable('user_invitations')
          .addColumn('token_hash', 'text', (c) => c.primaryKey())
          .addColumn('user_id', 'text', (c) => c.notNull().references('users.user_id'))
          .addColumn('purpose', 'text', (c) => c.notNull())
          .addColumn('created_at', 'text', (c) => c.notNull())
          .addColumn('expires_at', 'text', (c) => c.notNull())
          .addColumn('used_at', 'text')
          .execute();
        await db.schema.createIndex('user_invitations_by_user').on('user_invitations').column('user_id').execute();
        // Sessions by the hash of their id; ending all of a user's sessions goes by user_id.
        await db.schema
          .createTable('user_sessions')
          .addColumn('id_hash', 'text', (c) => c.primaryKey())
          .addColumn('user_id', 'text', (c) => c.notNull().references('users.user_id'))
          .addColumn('created_at', 'text', (c) => c.notNull())
          .addColumn('last_seen_at', 'text', (c) => c.notNull())
          .addColumn('expires_at', 'text', (c) => c.notNull())
          .execute();
        await db.schema.createIndex('user_sessions_by_user').on('user_sessions').column('user_id').execute();
        // The dashboard shows when each client last got a token (to the minute).
        await db.schema.alterTable('clients').addColumn('last_used_at', 'text').execute();
      },
    },
    '012_integrations_and_outbox': {
      async up(db: Kysely<any>) {
        // Where an account's alerts go (docs/api.md §12). An email target stays unconfirmed
        // (confirmed_at NULL) until its owner follows the mailed link, whose token is kept as a
        // hash only; a webhook's signing secret is sealed with the key secret like other keys.
        await db.schema
          .createTable('integrations')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.account_id'))
          .addColumn('kind', 'text', (c) => c.notNull())
          .addColumn('name', 'text', (c) => c.notNull())
          .addColumn('target', 'text', (c) => c.notNull())
          .addColumn('secret', 'text')
          .addColumn('alert_types', 'text', (c) => c.notNull())
          .addColumn('created_at', 'text', (c) => c.notNull())
          .addColumn('confirmed_at', 'text')
          .addColumn('confirm_hash', 'text')
          .addColumn('confirm_expires_at', 'text')
          .execute();
        await db.schema.createIndex('integrations_by_account').on('integrations').columns(['account_id', 'created_at']).execute();
        await db.schema.createIndex('integrations_by_confirm_hash').unique().on('integrations').column('confirm_hash').execute();

        // The outbox, first stage: one row per alert, written in the transaction of what caused
        // it. dedup_key is unique per account, so a repeat within its window (or a number's
        // second "first sighting" from a concurrent transaction) is never written at all.
        await db.schema
          .createTable('alerts')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('account_id', 'text', (c) => c.notNull())
          .addColumn('type', 'text', (c) => c.notNull())
          .addColumn('subject', 'text', (c) => c.notNull())
          .addColumn('dedup_key', 'text', (c) => c.notNull())
          .addColumn('data', 'text', (c) => c.notNull())
          .addColumn('created_at', 'text', (c) => c.notNull())
          // Only this integration (a test delivery); every subscribed one when NULL.
          .addColumn('integration_id', 'text')
          // new → fanned_out | suppressed; claimed_until leases a new row to one worker.
          .addColumn('state', 'text', (c) => c.notNull().defaultTo('new'))
          .addColumn('claimed_until', 'text')
          .execute();
        await db.schema.createIndex('alerts_dedup').unique().on('alerts').columns(['account_id', 'dedup_key']).execute();
        await db.schema.createIndex('alerts_by_state').on('alerts').columns(['state', 'created_at']).execute();
        await db.schema.createIndex('alerts_by_subject').on('alerts').columns(['account_id', 'subject', 'created_at']).execute();

        // The outbox, second stage: one row per alert and integration, until delivered or given up.
        await db.schema
          .createTable('alert_deliveries')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('alert_id', 'text', (c) => c.notNull())
          .addColumn('integration_id', 'text', (c) => c.notNull())
          .addColumn('account_id', 'text', (c) => c.notNull())
          .addColumn('status', 'text', (c) => c.notNull())
          .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
          .addColumn('next_attempt_at', 'text', (c) => c.notNull())
          .addColumn('claimed_until', 'text')
          .addColumn('created_at', 'text', (c) => c.notNull())
          .execute();
        await db.schema.createIndex('alert_deliveries_due').on('alert_deliveries').columns(['status', 'next_attempt_at']).execute();
        await db.schema.createIndex('alert_deliveries_by_integration').on('alert_deliveries').columns(['integration_id', 'created_at']).execute();

        // Every attempt, for the owner's delivery log.
        let attempts: CreateTableBuilder<string, string> = db.schema.createTable('delivery_attempts');
        attempts =
          caps.serialType === 'integer'
            ? attempts.addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement())
            : attempts.addColumn('id', 'bigserial', (c) => c.primaryKey());
        await attempts
          .addColumn('delivery_id', 'text', (c) => c.notNull())
          .addColumn('integration_id', 'text', (c) => c.notNull())
          .addColumn('attempt', 'integer', (c) => c.notNull())
          .addColumn('at', 'text', (c) => c.notNull())
          .addColumn('duration_ms', 'integer', (c) => c.notNull())
          .addColumn('status_code', 'integer')
          .addColumn('error', 'text')
          .addColumn('outcome', 'text', (c) => c.notNull())
          .execute();
        await db.schema.createIndex('delivery_attempts_by_integration').on('delivery_attempts').columns(['integration_id', 'id']).execute();
      },
    },
    '013_intelligence': {
      async up(db: Kysely<any>) {
        // Scores count the distinct honeypot nodes that saw a number or address (docs/scoring.md):
        // a third map of named counts (created_by_node_id → events) on both aggregate rows.
        for (const table of ['number_aggregates', 'ip_aggregates']) {
          await db.schema.alterTable(table).addColumn('nodes', 'text', (c) => c.notNull().defaultTo('{}')).execute();
        }
        // Range lookups (docs/api.md §13) find numbers by a prefix of their key's SHA-256: one
        // small row per scope and number, in the hash's order, so a prefix is one range scan.
        let hashes: CreateTableBuilder<string, string> = db.schema
          .createTable('number_hashes')
          .addColumn('scope', 'text', (c) => c.notNull())
          .addColumn('number_hash', 'text', (c) => c.notNull())
          .addColumn('number_key', 'text', (c) => c.notNull())
          .addPrimaryKeyConstraint('number_hashes_pk', ['scope', 'number_hash', 'number_key'] as never);
        if (caps.withoutRowid) hashes = hashes.modifyEnd(sql`without rowid`);
        await hashes.execute();
        // Feeds (docs/api.md §14) read each scope's rows most recently seen first, in pages.
        await db.schema.createIndex('number_aggregates_by_recency').on('number_aggregates').columns(['scope', 'last_seen', 'number_key']).execute();
        await db.schema.createIndex('ip_aggregates_by_recency').on('ip_aggregates').columns(['scope', 'last_seen', 'source_ip']).execute();

        // The rows kept so far get their nodes and hashes here, not by folding every event in
        // again: a refold would hold intake back behind its backlog and alert every number as
        // first seen once more. Nodes are counted from the events folded so far, in the scope
        // their account has now, as a rebuild counts them. Written out: this migration is history.
        const folded = await db.selectFrom('fold_state').select('through').where('name', '=', 'aggregates').executeTakeFirst();
        const scoped = sql`(select case when a.trusted = 1 then '*shared*' else e.account_id end as scope, e.*
          from events e join accounts a on a.account_id = e.account_id where e.id <= ${Number(folded?.through ?? 0)})`;
        for (const [table, key, where] of [
          ['number_aggregates', 'number_key', sql`where number_key is not null`],
          ['ip_aggregates', 'source_ip', sql``],
        ] as const) {
          await sql`update ${sql.table(table)} set nodes = n.counts from (
              select scope, k, cast(${sql.raw(caps.jsonObjectAgg)}(name, n) as text) as counts from (
                select scope, k, name, n, row_number() over (partition by scope, k order by n desc, name) as place
                from (select scope, ${sql.ref(key)} as k, created_by_node_id as name, count(*) as n from ${scoped} s ${where} group by scope, ${sql.ref(key)}, created_by_node_id) c
              ) ranked where place <= 32 group by scope, k
            ) n where n.scope = ${sql.table(table)}.scope and n.k = ${sql.table(table)}.${sql.ref(key)}`.execute(db);
        }
        let after: { scope: string; number_key: string } | undefined;
        for (;;) {
          let page = db.selectFrom('number_aggregates').select(['scope', 'number_key']).orderBy('scope').orderBy('number_key').limit(10_000);
          if (after) {
            const { scope, number_key } = after;
            page = page.where((eb) => eb.or([eb('scope', '>', scope), eb.and([eb('scope', '=', scope), eb('number_key', '>', number_key)])]));
          }
          const rows = (await page.execute()) as Array<{ scope: string; number_key: string }>;
          for (let i = 0; i < rows.length; i += 500) {
            const values = rows.slice(i, i + 500).map((r) => ({ ...r, number_hash: createHash('sha256').update(r.number_key, 'utf8').digest('hex') }));
            await db.insertInto('number_hashes').values(values).execute();
          }
          if (rows.length < 10_000) break;
          after = rows.at(-1);
        }
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

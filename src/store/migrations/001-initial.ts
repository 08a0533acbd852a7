import { sql, type CreateTableBuilder, type Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';
import type { MigrationCapabilities } from './capabilities.ts';
import { monthlyPartitions } from './monthly-partitions.ts';

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

/** Migration 001_initial. Frozen: it copies what it needs, and imports nothing of today's code. */
export function migration(caps: MigrationCapabilities): Migration {
  return {
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
      if (caps.partitionedEvents) await monthlyPartitions(db, new Date());
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
  };
}

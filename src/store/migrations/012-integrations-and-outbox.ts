import { type CreateTableBuilder, type Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';
import type { MigrationCapabilities } from './capabilities.ts';

/** Migration 012_integrations_and_outbox. Frozen: it copies what it needs, and imports nothing of today's code. */
export function migration(caps: MigrationCapabilities): Migration {
  return {
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
  };
}

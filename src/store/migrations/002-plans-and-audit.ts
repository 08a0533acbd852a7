import { type CreateTableBuilder, type Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';
import type { MigrationCapabilities } from './capabilities.ts';

/** The plans of this migration's release (commit 315cf9d), copied: today's defaults differ. */
const DEFAULT_PLANS = [
  { name: 'tester', maySubmit: false, lookups: { limit: 5, windowSeconds: 3600 }, submissions: null, maxClients: 1 },
  { name: 'contributor', maySubmit: true, lookups: { limit: 3600, windowSeconds: 3600 }, submissions: { limit: 100_000, windowSeconds: 3600 }, maxClients: 25 },
  { name: 'business', maySubmit: false, lookups: { limit: 25, windowSeconds: 60 }, submissions: null, maxClients: 10 },
  { name: 'service_provider', maySubmit: false, lookups: { limit: 25, windowSeconds: 1 }, submissions: null, maxClients: null },
] as const;

/** Migration 002_plans_and_audit. Frozen: it copies what it needs, and imports nothing of today's code. */
export function migration(caps: MigrationCapabilities): Migration {
  return {
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
  };
}

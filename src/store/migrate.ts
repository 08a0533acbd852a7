import type { Kysely } from 'kysely';
import { Migrator, type MigrationProvider, type MigrationResultSet } from 'kysely/migration';
import type { DialectCapabilities } from './dialect.ts';
import { migrations } from './migrations/index.ts';

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

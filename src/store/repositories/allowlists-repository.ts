import type { Kysely, Selectable } from 'kysely';
import type { AllowlistEntry, AllowlistKind, AllowlistRepository } from '../../domain/allowlists/allowlists.ts';
import { executorStatements, PreparedQuery, type StatementRunner } from '../prepared-query.ts';
import type { AllowlistEntriesTable, Schema } from '../schema.ts';

/** Allowlists in the SQL store (migration 028): every list in one table, by owner. */
export class SqlAllowlistRepository implements AllowlistRepository {
  private readonly db: Kysely<Schema>;
  private readonly listing: PreparedQuery<Selectable<AllowlistEntriesTable>>;

  /**
   * Lists are read through `statements` (Database.statements): a lookup that loads its
   * account's list must not wait behind a transaction open on the store's own connection, as on
   * SQLite it would; it reads the last committed state instead, as lookups do.
   */
  constructor(db: Kysely<Schema>, statements: StatementRunner = executorStatements(db)) {
    this.db = db;
    this.listing = new PreparedQuery(statements, 1, (owner) =>
      db.selectFrom('allowlist_entries').selectAll().where('owner', '=', owner as string).orderBy('added_at').orderBy('id').compile(),
    );
  }

  async list(owner: string): Promise<AllowlistEntry[]> {
    return (await this.listing.execute(owner)).map(entryOf);
  }

  async insert(owner: string, entry: AllowlistEntry): Promise<{ entry: AllowlistEntry; created: boolean }> {
    // Two requests adding the same value at once: the unique key keeps one, and both answer it.
    const result = await this.db
      .insertInto('allowlist_entries')
      .values({ ...entry, owner })
      .onConflict((oc) => oc.columns(['owner', 'kind', 'value']).doNothing())
      .executeTakeFirst();
    if (Number(result.numInsertedOrUpdatedRows ?? 0n) > 0) return { entry, created: true };
    const held = await this.db
      .selectFrom('allowlist_entries')
      .selectAll()
      .where('owner', '=', owner)
      .where('kind', '=', entry.kind)
      .where('value', '=', entry.value)
      .executeTakeFirstOrThrow();
    return { entry: entryOf(held), created: false };
  }

  async delete(owner: string, id: string): Promise<AllowlistEntry | undefined> {
    return this.db.transaction().execute(async (trx) => {
      const row = await trx.selectFrom('allowlist_entries').selectAll().where('owner', '=', owner).where('id', '=', id).executeTakeFirst();
      if (!row) return undefined;
      await trx.deleteFrom('allowlist_entries').where('owner', '=', owner).where('id', '=', id).execute();
      return entryOf(row);
    });
  }
}

function entryOf(row: Selectable<AllowlistEntriesTable>): AllowlistEntry {
  return { id: row.id, kind: row.kind as AllowlistKind, value: row.value, note: row.note, added_by: row.added_by, added_at: row.added_at };
}

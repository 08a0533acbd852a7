import type { Kysely } from 'kysely';
import { ConcurrentRotationError, type SigningKeyRecord, type SigningKeyRepository } from '../../domain/signing-key-records.ts';
import type { Schema, SigningKeysTable } from '../schema.ts';

/** The signing keys in the SQL store: `current_key` is 1 on the current key and NULL on the others, unique (migration 009). */
export class SqlSigningKeys implements SigningKeyRepository {
  private readonly db: Kysely<Schema>;

  constructor(db: Kysely<Schema>) {
    this.db = db;
  }

  async live(at: string): Promise<SigningKeyRecord[]> {
    const rows = await this.db
      .selectFrom('signing_keys')
      .selectAll()
      .where((eb) => eb.or([eb('retires_at', 'is', null), eb('retires_at', '>', at)]))
      .orderBy('created_at')
      .orderBy('kid')
      .execute();
    return rows.map(recordOf);
  }

  async list(): Promise<Array<Pick<SigningKeyRecord, 'kid' | 'created_at' | 'current' | 'retires_at'>>> {
    const rows = await this.db.selectFrom('signing_keys').select(['kid', 'created_at', 'current_key', 'retires_at']).orderBy('created_at').orderBy('kid').execute();
    return rows.map((row) => ({ kid: row.kid, created_at: row.created_at, current: row.current_key === 1, retires_at: row.retires_at }));
  }

  async addFirst(key: SigningKeyRecord): Promise<void> {
    await this.db.insertInto('signing_keys').values(rowOf(key)).onConflict((oc) => oc.doNothing()).execute();
  }

  async replaceCurrent(key: SigningKeyRecord, retiresAt: string): Promise<{ previous: string | undefined; removed: string[] }> {
    return this.db.transaction().execute(async (trx) => {
      const previous = await trx.selectFrom('signing_keys').select('kid').where('current_key', '=', 1).executeTakeFirst();
      const past = await trx.selectFrom('signing_keys').select('kid').where('retires_at', '<=', key.created_at).execute();
      if (past.length > 0) await trx.deleteFrom('signing_keys').where('kid', 'in', past.map((row) => row.kid)).execute();
      if (previous) {
        await trx.updateTable('signing_keys').set({ current_key: null, retires_at: retiresAt }).where('kid', '=', previous.kid).where('current_key', '=', 1).execute();
      }
      // A rotation committed meanwhile holds the unique current key: this insert finds it and rolls back.
      const inserted = await trx.insertInto('signing_keys').values(rowOf(key)).onConflict((oc) => oc.doNothing()).executeTakeFirst();
      if (Number(inserted.numInsertedOrUpdatedRows ?? 0) !== 1) throw new ConcurrentRotationError();
      return { previous: previous?.kid, removed: past.map((row) => row.kid) };
    });
  }
}

function recordOf(row: SigningKeysTable): SigningKeyRecord {
  const { current_key, ...rest } = row;
  return { ...rest, current: current_key === 1 };
}

function rowOf(key: SigningKeyRecord): SigningKeysTable {
  const { current, ...rest } = key;
  return { ...rest, current_key: current ? 1 : null };
}

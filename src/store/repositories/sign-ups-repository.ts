import type { Kysely } from 'kysely';
import type { PendingSignUp, SignUpsRepository } from '../../domain/accounts/sign-ups.ts';
import type { Schema } from '../schema.ts';

/** Sign-ups waiting for their mailed link, in the SQL store (migration 032). */
export class SqlSignUpsRepository implements SignUpsRepository {
  private readonly db: Kysely<Schema>;

  constructor(db: Kysely<Schema>) {
    this.db = db;
  }

  async insert(signUp: PendingSignUp): Promise<void> {
    await this.db.insertInto('sign_ups').values(signUp).execute();
  }

  async find(tokenHash: string): Promise<PendingSignUp | undefined> {
    return this.db.selectFrom('sign_ups').selectAll().where('token_hash', '=', tokenHash).executeTakeFirst();
  }

  async use(tokenHash: string, at: string): Promise<boolean> {
    // One statement: of two requests following the same link at once, exactly one updates the row.
    const result = await this.db.updateTable('sign_ups').set({ used_at: at }).where('token_hash', '=', tokenHash).where('used_at', 'is', null).executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  async removeExpired(before: string): Promise<void> {
    await this.db.deleteFrom('sign_ups').where('expires_at', '<', before).execute();
  }
}

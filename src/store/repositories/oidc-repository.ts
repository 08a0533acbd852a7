import type { Kysely } from 'kysely';
import type { OidcRepository, StoredAttempt } from '../../domain/accounts/oidc-sign-in.ts';
import type { Schema } from '../schema.ts';

/** Single sign-on's links and attempts in the SQL store (migration 033). */
export class SqlOidcRepository implements OidcRepository {
  private readonly db: Kysely<Schema>;

  constructor(db: Kysely<Schema>) {
    this.db = db;
  }

  async insertAttempt(attempt: StoredAttempt, now: string): Promise<void> {
    // Abandoned attempts are forgotten as new ones arrive: the table holds at most ten minutes' worth.
    await this.db.deleteFrom('oidc_attempts').where('expires_at', '<', now).execute();
    await this.db.insertInto('oidc_attempts').values(attempt).execute();
  }

  async takeAttempt(stateHash: string): Promise<StoredAttempt | undefined> {
    const row = await this.db.selectFrom('oidc_attempts').selectAll().where('state_hash', '=', stateHash).executeTakeFirst();
    if (!row) return undefined;
    // Two callbacks with one state (a reload, a replay) race here: only the one whose delete
    // removed the row goes on.
    const deleted = await this.db.deleteFrom('oidc_attempts').where('state_hash', '=', stateHash).executeTakeFirst();
    return deleted.numDeletedRows > 0n ? row : undefined;
  }

  async findLinkedUser(issuer: string, subject: string): Promise<string | undefined> {
    const row = await this.db.selectFrom('oidc_identities').select('user_id').where('issuer', '=', issuer).where('subject', '=', subject).executeTakeFirst();
    return row?.user_id;
  }

  async link(issuer: string, subject: string, userId: string, at: string): Promise<void> {
    // Two first sign-ins of one person at once both link the same user: the second finds the row.
    await this.db
      .insertInto('oidc_identities')
      .values({ issuer, subject, user_id: userId, created_at: at })
      .onConflict((c) => c.columns(['issuer', 'subject']).doNothing())
      .execute();
  }
}

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { removeExpiredSignInRows } from '../../src/store/maintenance/expired-sign-in-rows.ts';
import { makeUser } from '../dashboard/web-client.ts';
import { eventually } from '../support/eventually.ts';
import { startHarness, type Harness } from '../support/harness.ts';

const MINUTE = 60_000;

/**
 * Unfinished sign-in steps (docs/operations.md, "Retention") go at the maintenance pass, not
 * only when the next of their kind is made: a quiet server keeps none past its end.
 */
describe('the maintenance pass removes expired sign-in steps', () => {
  let h: Harness;

  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(() => h?.close());

  /** One row of each kind ending at `expiresAt`, named by `tag`. */
  async function rowsEnding(tag: string, expiresAt: Date, userId: string) {
    const { db } = h.services.database;
    const created = new Date(expiresAt.getTime() - 10 * MINUTE).toISOString();
    const expires = expiresAt.toISOString();
    await db.insertInto('pending_sign_ins').values({ token_hash: `pending-${tag}`, user_id: userId, next: '/', method: 'password', created_at: created, expires_at: expires }).execute();
    await db
      .insertInto('sign_ups')
      .values({ token_hash: `signup-${tag}`, email: `${tag}@example.test`, account_name: tag, password_hash: 'scrypt$hash', ip: '198.51.100.7', created_at: created, expires_at: expires, used_at: null })
      .execute();
    await db.insertInto('oidc_attempts').values({ state_hash: `attempt-${tag}`, nonce: 'n', code_verifier: 'v', next_path: '/', created_at: created, expires_at: expires }).execute();
  }

  async function left() {
    const { db } = h.services.database;
    return {
      pending: (await db.selectFrom('pending_sign_ins').select('token_hash').orderBy('token_hash').execute()).map((r) => r.token_hash),
      signUps: (await db.selectFrom('sign_ups').select('token_hash').orderBy('token_hash').execute()).map((r) => r.token_hash),
      attempts: (await db.selectFrom('oidc_attempts').select('state_hash').orderBy('state_hash').execute()).map((r) => r.state_hash),
    };
  }

  it('removes the expired pending sign-ins, sign-ups and single sign-on attempts at the pass, and keeps the live ones', async () => {
    const { account } = await h.account();
    const { user } = await makeUser(h, account.account_id);
    const now = Date.now();
    await rowsEnding('expired', new Date(now - MINUTE), user.user_id);
    // Still in use for an hour: a step someone is taking now.
    await rowsEnding('live', new Date(now + 60 * MINUTE), user.user_id);

    // The pass runs at start, then hourly (src/services.ts adds this sweep to it).
    h.services.storeMaintenance.start();
    try {
      const after = await eventually('the expired rows gone', left, (rows) => !rows.pending.includes('pending-expired') && !rows.signUps.includes('signup-expired') && !rows.attempts.includes('attempt-expired'));
      expect(after).toEqual({ pending: ['pending-live'], signUps: ['signup-live'], attempts: ['attempt-live'] });
    } finally {
      h.services.storeMaintenance.stop();
    }
  });

  it('removes a row once it has ended, not before, and says what it removed', async () => {
    const { account } = await h.account();
    const { user } = await makeUser(h, account.account_id);
    const end = new Date(Date.now() + 30 * MINUTE);
    await rowsEnding('edge', end, user.user_id);
    // A moment before the end, all three are live.
    expect(await removeExpiredSignInRows(h.services.database.db, new Date(end.getTime() - 1))).toEqual({ pendingSignIns: 0, signUps: 0, oidcAttempts: 0 });
    // A moment after, all three go; a second sweep finds nothing.
    expect(await removeExpiredSignInRows(h.services.database.db, new Date(end.getTime() + 1))).toEqual({ pendingSignIns: 1, signUps: 1, oidcAttempts: 1 });
    expect(await removeExpiredSignInRows(h.services.database.db, new Date(end.getTime() + 1))).toEqual({ pendingSignIns: 0, signUps: 0, oidcAttempts: 0 });
    // The first test's live rows end later still.
    expect(await left()).toEqual({ pending: ['pending-live'], signUps: ['signup-live'], attempts: ['attempt-live'] });
  });
});

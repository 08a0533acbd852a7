import type { Kysely } from 'kysely';
import type { Schema } from '../schema.ts';

/** How many rows of each kind one sweep removed. */
export interface ExpiredSignInRowsReport {
  pendingSignIns: number;
  signUps: number;
  oidcAttempts: number;
}

/**
 * Removes the sign-in steps left unfinished past their end: pending second steps (five minutes),
 * pending sign-ups (24 hours) and single sign-on attempts (10 minutes). Each kind is also swept
 * when the next row of it is made; this sweep, run by every maintenance pass, is for a quiet
 * server, which would otherwise keep the last ones (an email address, a password's hash) for as
 * long as nobody signs in. Each row is past use once expired, with the same bound its own code
 * refuses it at, so no live step is taken. The tables hold minutes' or a day's worth of rows at
 * most (their makers are rate-bounded), so one delete of each is short.
 */
export async function removeExpiredSignInRows(db: Kysely<Schema>, now = new Date()): Promise<ExpiredSignInRowsReport> {
  const at = now.toISOString();
  const pending = await db.deleteFrom('pending_sign_ins').where('expires_at', '<=', at).executeTakeFirst();
  const signUps = await db.deleteFrom('sign_ups').where('expires_at', '<', at).executeTakeFirst();
  const attempts = await db.deleteFrom('oidc_attempts').where('expires_at', '<', at).executeTakeFirst();
  return { pendingSignIns: Number(pending.numDeletedRows), signUps: Number(signUps.numDeletedRows), oidcAttempts: Number(attempts.numDeletedRows) };
}

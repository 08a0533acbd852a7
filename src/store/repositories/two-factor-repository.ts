import type { Kysely } from 'kysely';
import type { KeySealer } from '../../domain/accounts/key-sealing.ts';
import type { PendingSignIn, PendingSignInsRepository } from '../../domain/accounts/pending-sign-ins.ts';
import type { TwoFactorRecord, TwoFactorRepository } from '../../domain/accounts/two-factor.ts';
import type { Schema } from '../schema.ts';

/** Where a user's sealed TOTP secret belongs: sealed for this row, it opens nowhere else. */
export const twoFactorSecretContext = (userId: string) => `user_two_factor/${userId}`;

/** Two-factor enrolments, recovery codes, pending sign-ins and accounts' requirements (migration 031); secrets sealed with the key secret. */
export class SqlTwoFactorRepository implements TwoFactorRepository, PendingSignInsRepository {
  private readonly db: Kysely<Schema>;
  private readonly sealer: KeySealer;

  constructor(db: Kysely<Schema>, sealer: KeySealer) {
    this.db = db;
    this.sealer = sealer;
  }

  async findTwoFactor(userId: string): Promise<TwoFactorRecord | undefined> {
    const row = await this.db.selectFrom('user_two_factor').selectAll().where('user_id', '=', userId).executeTakeFirst();
    if (!row) return undefined;
    return { ...row, secret: this.sealer.open(row.secret, twoFactorSecretContext(userId)), last_step: row.last_step === null ? null : Number(row.last_step) };
  }

  async saveAwaitedSecret(userId: string, secret: string, at: string): Promise<void> {
    const sealed = this.sealer.seal(secret, twoFactorSecretContext(userId));
    await this.db
      .insertInto('user_two_factor')
      .values({ user_id: userId, secret: sealed, enrolled_at: null, last_step: null, created_at: at })
      .onConflict((oc) => oc.column('user_id').doUpdateSet({ secret: sealed, created_at: at }).where('user_two_factor.enrolled_at', 'is', null))
      .execute();
  }

  async markEnrolled(userId: string, step: number, at: string): Promise<boolean> {
    const result = await this.db.updateTable('user_two_factor').set({ enrolled_at: at, last_step: step }).where('user_id', '=', userId).where('enrolled_at', 'is', null).executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  async acceptStep(userId: string, step: number): Promise<boolean> {
    // One statement: of two requests with the same code at once, exactly one moves the step on.
    const result = await this.db
      .updateTable('user_two_factor')
      .set({ last_step: step })
      .where('user_id', '=', userId)
      .where('enrolled_at', 'is not', null)
      .where((eb) => eb.or([eb('last_step', 'is', null), eb('last_step', '<', step)]))
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  async deleteTwoFactor(userId: string): Promise<boolean> {
    await this.db.deleteFrom('user_recovery_codes').where('user_id', '=', userId).execute();
    const result = await this.db.deleteFrom('user_two_factor').where('user_id', '=', userId).executeTakeFirst();
    return result.numDeletedRows > 0n;
  }

  async replaceRecoveryCodes(userId: string, hashes: string[], at: string): Promise<void> {
    await this.db.transaction().execute(async (tx) => {
      await tx.deleteFrom('user_recovery_codes').where('user_id', '=', userId).execute();
      await tx.insertInto('user_recovery_codes').values(hashes.map((code_hash) => ({ user_id: userId, code_hash, created_at: at, used_at: null }))).execute();
    });
  }

  async spendRecoveryCode(userId: string, hash: string, at: string): Promise<boolean> {
    const result = await this.db.updateTable('user_recovery_codes').set({ used_at: at }).where('user_id', '=', userId).where('code_hash', '=', hash).where('used_at', 'is', null).executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  async countUnspentRecoveryCodes(userId: string): Promise<number> {
    const row = await this.db.selectFrom('user_recovery_codes').select((eb) => eb.fn.countAll().as('n')).where('user_id', '=', userId).where('used_at', 'is', null).executeTakeFirstOrThrow();
    return Number(row.n);
  }

  async isTwoFactorRequired(accountId: string): Promise<boolean> {
    return (await this.db.selectFrom('account_two_factor_requirements').select('account_id').where('account_id', '=', accountId).executeTakeFirst()) !== undefined;
  }

  async setTwoFactorRequired(accountId: string, required: boolean, at: string, by: string): Promise<void> {
    if (!required) {
      await this.db.deleteFrom('account_two_factor_requirements').where('account_id', '=', accountId).execute();
      return;
    }
    await this.db
      .insertInto('account_two_factor_requirements')
      .values({ account_id: accountId, required_at: at, required_by: by })
      .onConflict((oc) => oc.column('account_id').doNothing())
      .execute();
  }

  async insertPendingSignIn(pending: PendingSignIn): Promise<void> {
    await this.db.insertInto('pending_sign_ins').values(pending).execute();
  }

  async findPendingSignIn(tokenHash: string): Promise<PendingSignIn | undefined> {
    return this.db.selectFrom('pending_sign_ins').selectAll().where('token_hash', '=', tokenHash).executeTakeFirst();
  }

  async deletePendingSignIn(tokenHash: string): Promise<boolean> {
    const result = await this.db.deleteFrom('pending_sign_ins').where('token_hash', '=', tokenHash).executeTakeFirst();
    return result.numDeletedRows > 0n;
  }

  async deletePendingSignInsOf(userId: string): Promise<void> {
    await this.db.deleteFrom('pending_sign_ins').where('user_id', '=', userId).execute();
  }

  async deleteEndedPendingSignIns(now: string): Promise<void> {
    await this.db.deleteFrom('pending_sign_ins').where('expires_at', '<=', now).execute();
  }
}

import { randomBytes } from 'node:crypto';
import type { Mailer } from '../alerts/integrations.ts';
import { ServiceError } from '../errors.ts';
import { readableTime } from '../readable-time.ts';
import { NO_AUDIT, type AuditAction, type AuditTrail } from './audit.ts';
import { hashSecret } from './secrets.ts';
import { looksLikeTotpCode, newTotpSecret, stepOfCode, totpUri } from './totp.ts';
import type { EndSessions, User } from './users.ts';

/**
 * Two-factor sign-in (docs/dashboard.md, "Two-factor sign-in"): a TOTP app's code, or one of ten
 * single-use recovery codes, after the password. The secret is sealed at rest by the repository;
 * recovery codes are kept only as hashes. A code is spent when accepted: the last accepted time
 * step is kept per user, and no code of that step or an earlier one is taken again.
 */

/** A user's enrolment as stored, its secret open. */
export interface TwoFactorRecord {
  user_id: string;
  secret: string;
  /** null while the first code is awaited. */
  enrolled_at: string | null;
  last_step: number | null;
  created_at: string;
}

export interface TwoFactorRepository {
  findTwoFactor(userId: string): Promise<TwoFactorRecord | undefined>;
  /** Stores a new secret awaiting its first code, replacing one that awaited it; never an enrolled one. */
  saveAwaitedSecret(userId: string, secret: string, at: string): Promise<void>;
  /** Marks the awaited secret enrolled at the first code's step; false if none awaited. */
  markEnrolled(userId: string, step: number, at: string): Promise<boolean>;
  /** Records `step` as the last accepted, in one statement, only if it is later than the last: false for a replay. */
  acceptStep(userId: string, step: number): Promise<boolean>;
  /** Removes the enrolment and its recovery codes; false if there was none. */
  deleteTwoFactor(userId: string): Promise<boolean>;
  replaceRecoveryCodes(userId: string, hashes: string[], at: string): Promise<void>;
  /** Marks an unspent code spent, in one statement; false if none such (wrong, or spent already). */
  spendRecoveryCode(userId: string, hash: string, at: string): Promise<boolean>;
  countUnspentRecoveryCodes(userId: string): Promise<number>;
  isTwoFactorRequired(accountId: string): Promise<boolean>;
  setTwoFactorRequired(accountId: string, required: boolean, at: string, by: string): Promise<void>;
}

/** What a user's settings page shows. */
export interface TwoFactorState {
  enrolled: boolean;
  /** The secret awaiting its first code (shown as a QR code), while not enrolled. */
  awaited?: { secret: string; uri: string };
  recoveryCodesLeft: number;
}

/** What a second step came to: accepted by a code or by a recovery code (and how many are left), or refused. */
export type SecondStepResult = { accepted: true; recoveryCodesLeft?: number } | { accepted: false };

/** How many recovery codes an enrolment gets. */
export const RECOVERY_CODE_COUNT = 10;

export interface TwoFactorOptions {
  repo: TwoFactorRepository;
  audit?: AuditTrail;
  endSessions: EndSessions;
  /** Ends the user's sign-ins awaiting a second step. */
  endPendingSignIns: (userId: string) => Promise<void>;
  mailer?: Mailer;
  /** Shown by the app beside the code: the service's public URL's host. */
  issuer: string;
  /** The clock the codes' time steps are read from. */
  now?: () => Date;
}

export class TwoFactor {
  private readonly repo: TwoFactorRepository;
  private readonly audit: AuditTrail;
  private readonly options: TwoFactorOptions;
  private readonly now: () => Date;

  constructor(options: TwoFactorOptions) {
    this.repo = options.repo;
    this.audit = options.audit ?? NO_AUDIT;
    this.options = options;
    this.now = options.now ?? (() => new Date());
  }

  async state(user: User): Promise<TwoFactorState> {
    const record = await this.repo.findTwoFactor(user.user_id);
    if (!record?.enrolled_at) return { enrolled: false, recoveryCodesLeft: 0, ...(record ? { awaited: { secret: record.secret, uri: this.uriOf(user, record.secret) } } : {}) };
    return { enrolled: true, recoveryCodesLeft: await this.repo.countUnspentRecoveryCodes(user.user_id) };
  }

  /** Whether the user signs in with a second step. */
  async enrolled(userId: string): Promise<boolean> {
    return Boolean((await this.repo.findTwoFactor(userId))?.enrolled_at);
  }

  /** Whether the user's account requires two-factor sign-in and the user has none yet: every page but enrolment is closed. */
  async enrolmentDue(user: User): Promise<boolean> {
    if (user.account_id === null || !(await this.repo.isTwoFactorRequired(user.account_id))) return false;
    return !(await this.enrolled(user.user_id));
  }

  async required(accountId: string): Promise<boolean> {
    return this.repo.isTwoFactorRequired(accountId);
  }

  /** A new secret to scan, awaiting its first code; one awaited before is replaced. */
  async start(user: User): Promise<{ secret: string; uri: string }> {
    if (await this.enrolled(user.user_id)) throw new ServiceError('validation_failed', 'two-factor sign-in is on already');
    const secret = newTotpSecret();
    await this.repo.saveAwaitedSecret(user.user_id, secret, this.now().toISOString());
    return { secret, uri: this.uriOf(user, secret) };
  }

  /** The first code proves the app holds the secret: enrolled, and the recovery codes made, answered once. */
  async confirm(user: User, code: string): Promise<string[]> {
    const record = await this.repo.findTwoFactor(user.user_id);
    if (!record || record.enrolled_at) throw new ServiceError('validation_failed', 'start setting up two-factor sign-in first');
    const step = stepOfCode(record.secret, code, this.now());
    if (step === undefined) throw wrongCode();
    // The first code is spent too: it cannot sign in a moment later.
    if (!(await this.repo.markEnrolled(user.user_id, step, this.now().toISOString()))) throw new ServiceError('validation_failed', 'start setting up two-factor sign-in first');
    const codes = await this.newRecoveryCodes(user.user_id);
    await this.record('user.two_factor_enabled', `user:${user.user_id}`, user);
    return codes;
  }

  /** The second step of a sign-in: the app's code (spent once accepted), or a recovery code (spent). */
  async secondStep(user: User, input: string): Promise<SecondStepResult> {
    if (looksLikeTotpCode(input)) return { accepted: await this.codeAccepted(user, input) };
    const normalized = normalizeRecoveryCode(input);
    if (normalized === undefined || !(await this.repo.spendRecoveryCode(user.user_id, recoveryCodeHash(user.user_id, normalized), this.now().toISOString()))) return { accepted: false };
    const left = await this.repo.countUnspentRecoveryCodes(user.user_id);
    await this.record('user.recovery_code_used', `user:${user.user_id}`, user, { recovery_codes_left: left });
    return { accepted: true, recoveryCodesLeft: left };
  }

  /** Turns two-factor sign-in off with a current code; refused while the account requires it. */
  async disable(user: User, code: string): Promise<void> {
    if (user.account_id !== null && (await this.repo.isTwoFactorRequired(user.account_id))) {
      throw new ServiceError('validation_failed', 'your account’s owners require two-factor sign-in, so it stays on');
    }
    await this.requireCode(user, code);
    await this.repo.deleteTwoFactor(user.user_id);
    await this.record('user.two_factor_disabled', `user:${user.user_id}`, user);
  }

  /** Ten new recovery codes for a current code; the old ones stop working. */
  async regenerateRecoveryCodes(user: User, code: string): Promise<string[]> {
    await this.requireCode(user, code);
    const codes = await this.newRecoveryCodes(user.user_id);
    await this.record('user.recovery_codes_regenerated', `user:${user.user_id}`, user);
    return codes;
  }

  /**
   * The operator's recovery for a user who lost the app and the codes: the enrolment removed,
   * every session and pending sign-in ended, the user mailed where the server sends mail.
   */
  async reset(user: User, actor = 'operator'): Promise<{ removed: boolean; mailed: boolean }> {
    const removed = await this.repo.deleteTwoFactor(user.user_id);
    await this.options.endSessions(user.user_id);
    await this.options.endPendingSignIns(user.user_id);
    await this.record('user.two_factor_reset', actor, user, { removed });
    const mailer = this.options.mailer;
    if (!mailer?.configured) return { removed, mailed: false };
    await mailer.send({
      to: user.email,
      subject: 'Tollwatch: two-factor sign-in was reset',
      text: [
        `The operator of this Tollwatch reset two-factor sign-in for ${user.email}, and signed you out everywhere.`,
        'You now sign in with your password alone; set two-factor sign-in up again from your account page.',
        '',
        'If you did not ask for this, tell the operator at once.',
      ].join('\n'),
    });
    return { removed, mailed: true };
  }

  /**
   * Tells a user that wrong two-factor codes for them met the bound, and until when codes are
   * refused: whoever gave them had the password (or a session). Answers whether a mail went out.
   */
  async warnOfCodeGuessing(user: User, ip: string, retryAfterSeconds: number): Promise<boolean> {
    const mailer = this.options.mailer;
    if (!mailer?.configured) return false;
    // The wall clock, not the codes' clock: the mail names a time its reader can wait for.
    const until = readableTime(new Date(Date.now() + retryAfterSeconds * 1000));
    await mailer.send({
      to: user.email,
      subject: 'Tollwatch: too many wrong two-factor codes',
      text: [
        `Too many wrong two-factor codes were given for ${user.email} on Tollwatch, most recently from ${ip}.`,
        `Codes for ${user.email} are refused until ${until}, even the right one.`,
        '',
        'If that was not you, someone knows your password: ask your operator for a password reset link at once,',
        'and choose a password you use nowhere else.',
      ].join('\n'),
    });
    return true;
  }

  /** An owner requires (or stops requiring) two-factor sign-in of every user of their account. */
  async setRequired(owner: User, required: boolean): Promise<void> {
    if (owner.role !== 'owner' || owner.account_id === null) throw new ServiceError('not_found', 'only an account’s owners change this');
    await this.repo.setTwoFactorRequired(owner.account_id, required, this.now().toISOString(), `user:${owner.user_id}`);
    await this.audit.record({ action: 'account.two_factor_required', actor: `user:${owner.user_id}`, accountId: owner.account_id, detail: { required } });
  }

  private async requireCode(user: User, code: string): Promise<void> {
    if (!(await this.codeAccepted(user, code))) throw wrongCode();
  }

  private async codeAccepted(user: User, code: string): Promise<boolean> {
    const record = await this.repo.findTwoFactor(user.user_id);
    if (!record?.enrolled_at) return false;
    const step = stepOfCode(record.secret, code, this.now());
    return step !== undefined && (await this.repo.acceptStep(user.user_id, step));
  }

  private async newRecoveryCodes(userId: string): Promise<string[]> {
    const codes = Array.from({ length: RECOVERY_CODE_COUNT }, newRecoveryCode);
    await this.repo.replaceRecoveryCodes(userId, codes.map((c) => recoveryCodeHash(userId, normalizeRecoveryCode(c)!)), this.now().toISOString());
    return codes;
  }

  private uriOf(user: User, secret: string): string {
    return totpUri(secret, this.options.issuer, user.email);
  }

  private record(action: AuditAction, actor: string, user: User, detail: Record<string, unknown> = {}) {
    return this.audit.record({ action, actor, accountId: user.account_id, detail: { user_id: user.user_id, email: user.email, ...detail } });
  }
}

function wrongCode(): ServiceError {
  return new ServiceError('validation_failed', 'that code is not the one your app shows now', [{ field: 'code', message: 'is not the current code' }]);
}

/** Lower-case letters and digits without look-alikes (no 0, 1, l, o): easy to copy by hand. */
const RECOVERY_ALPHABET = 'abcdefghijkmnpqrstuvwxyz23456789';

/**
 * A recovery code: 16 characters of a 32-letter alphabet (80 random bits), in four groups. So
 * many bits make a fast hash as safe to store as a slow one (as with client secrets).
 */
function newRecoveryCode(): string {
  const bytes = randomBytes(16);
  const chars = [...bytes].map((b) => RECOVERY_ALPHABET[b % 32]!).join('');
  return chars.match(/.{4}/g)!.join('-');
}

/** A typed recovery code as stored: lower-cased, without dashes or spaces; undefined if it cannot be one. */
function normalizeRecoveryCode(input: string): string | undefined {
  const text = input.toLowerCase().replace(/[\s-]+/g, '');
  return /^[a-z2-9]{16}$/.test(text) ? text : undefined;
}

/** Salted with the user's id: one user's code hash says nothing of another's. */
function recoveryCodeHash(userId: string, normalized: string): string {
  return hashSecret(`tollwatch-recovery:${userId}:${normalized}`);
}

import { randomBytes } from 'node:crypto';
import { readableTime } from '../readable-time.ts';
import { ServiceError } from '../errors.ts';
import type { FieldError } from '../field-error.ts';
import type { Mailer } from '../alerts/integrations.ts';
import { validName } from './accounts.ts';
import { checkPasswordRules, hashPassword } from './passwords.ts';
import { hashSecret, INVITATION_TOKEN_PREFIX } from './secrets.ts';
import { validEmail, type User, type UsersService } from './users.ts';

/**
 * Open sign-up (docs/dashboard.md, "Sign-up"). A person gives an address, a password and an
 * account name; nothing is created until they follow a link mailed to that address. The link's
 * token (256 random bits) is stored only as its SHA-256 and works once, for 24 hours; the
 * password is hashed at once and never kept in clear. An address that already has a user gets a
 * mail saying someone tried, and the person asking is answered exactly as for a new address.
 */

/** A sign-up waiting for its link. */
export interface PendingSignUp {
  token_hash: string;
  email: string;
  account_name: string;
  password_hash: string;
  /** The address it was asked from, named in the mail. */
  ip: string;
  created_at: string;
  expires_at: string;
  used_at: string | null;
}

/** Where pending sign-ups are kept. */
export interface SignUpsRepository {
  insert(signUp: PendingSignUp): Promise<void>;
  find(tokenHash: string): Promise<PendingSignUp | undefined>;
  /** Marks an unused sign-up used at `at`; false if it was used already (two tabs, a replay). */
  use(tokenHash: string, at: string): Promise<boolean>;
  /** Forgets sign-ups that expired before `before`, used or not. */
  removeExpired(before: string): Promise<void>;
}

/** How long a sign-up's link works. */
export const SIGN_UP_TTL_MS = 24 * 3600 * 1000;

/** A sign-up form as given, checked; nothing stored yet. */
export interface SignUpForm {
  email: string;
  password: string;
  accountName: string;
}

const TOKEN = new RegExp(`^${INVITATION_TOKEN_PREFIX}[A-Za-z0-9_-]{43}$`);

/**
 * Checks a sign-up form: the same checks whether or not the address is taken, so a refusal says
 * nothing of who has an account. Every broken field is named at once.
 */
export function checkSignUpForm(input: SignUpForm): SignUpForm {
  const errors: FieldError[] = [];
  const attempt = <T>(field: string, check: () => T): T | undefined => {
    try {
      return check();
    } catch (err) {
      if (!(err instanceof ServiceError)) throw err;
      errors.push({ field, message: err.errors?.[0]?.message ?? err.message });
      return undefined;
    }
  };
  const email = attempt('email', () => validEmail(input.email));
  attempt('password', () => checkPasswordRules(input.password));
  const accountName = attempt('account_name', () => validName(input.accountName));
  if (errors.length > 0 || email === undefined || accountName === undefined) {
    throw new ServiceError('validation_failed', errors.map((e) => `${e.field.replace('_', ' ')} ${e.message}`).join('; '), errors);
  }
  return { email, password: input.password, accountName };
}

export interface SignUpsOptions {
  repo: SignUpsRepository;
  users: Pick<UsersService, 'emailTaken' | 'createSignedUpOwner'>;
  mailer: Mailer;
  /** Links are `<publicUrl>/sign-up/<token>`. */
  publicUrl: string;
  /** The plan of the accounts sign-up makes (TOLLWATCH_SIGN_UP_PLAN). */
  plan: string;
  now?: () => Date;
}

export class SignUps {
  private readonly options: SignUpsOptions;
  private readonly now: () => Date;

  constructor(options: SignUpsOptions) {
    this.options = options;
    this.now = options.now ?? (() => new Date());
  }

  /**
   * Mails the link of a new sign-up, or, where the address already has a user, tells that user
   * someone tried. The caller answers the same either way and runs this off the answer's path,
   * so neither the words nor the time tell which happened.
   */
  async request(form: SignUpForm, ip: string): Promise<'mailed_link' | 'warned_user'> {
    const { repo, mailer, users } = this.options;
    // Hashed before anything else, for a taken address too: the work is the same either way.
    const passwordHash = await hashPassword(form.password);
    const now = this.now();
    await repo.removeExpired(now.toISOString());
    if (await users.emailTaken(form.email)) {
      await mailer.send({
        to: form.email,
        subject: 'Tollwatch: someone tried to sign up with your address',
        text: [
          `Someone (from ${ip}) tried to create a new Tollwatch account with ${form.email}, which already has one.`,
          '',
          'Nothing was created and nothing changed. If that was you, sign in instead (or ask for a new password',
          `at ${this.options.publicUrl}/forgot-password). If it was not you, ignore this mail.`,
        ].join('\n'),
      });
      return 'warned_user';
    }
    const token = `${INVITATION_TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`;
    const expiresAt = new Date(now.getTime() + SIGN_UP_TTL_MS).toISOString();
    await repo.insert({ token_hash: hashSecret(token), email: form.email, account_name: form.accountName, password_hash: passwordHash, ip, created_at: now.toISOString(), expires_at: expiresAt, used_at: null });
    await mailer.send({
      to: form.email,
      subject: 'Tollwatch: confirm your new account',
      text: [
        `Someone (from ${ip}) asked to create the Tollwatch account "${form.accountName}" with ${form.email}.`,
        '',
        `To create it, open this link before ${readableTime(expiresAt)} (it works once):\n${this.options.publicUrl}/sign-up/${token}`,
        '',
        'If that was not you, ignore this mail: nothing is created without the link.',
      ].join('\n'),
    });
    return 'mailed_link';
  }

  /** The sign-up a link names while it still works; `not_found` otherwise (never why). */
  async open(token: string): Promise<PendingSignUp> {
    const found = TOKEN.test(token) ? await this.options.repo.find(hashSecret(token)) : undefined;
    if (!found || found.used_at !== null || found.expires_at <= this.now().toISOString()) throw linkGone();
    return found;
  }

  /**
   * Follows a link, once: the account is created on the sign-up plan with the person as its
   * owner. `validation_failed` if the address became a user's in the meantime.
   */
  async confirm(token: string, ip: string | null): Promise<User> {
    const pending = await this.open(token);
    if (!(await this.options.repo.use(pending.token_hash, this.now().toISOString()))) throw linkGone();
    return this.options.users.createSignedUpOwner({ accountName: pending.account_name, plan: this.options.plan, email: pending.email, passwordHash: pending.password_hash }, ip);
  }
}

function linkGone(): ServiceError {
  return new ServiceError('not_found', 'this link is unknown, used or expired; sign up again');
}

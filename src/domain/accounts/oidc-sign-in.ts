import type { AccountsService } from './accounts.ts';
import { hashSecret } from './secrets.ts';
import type { User, UsersRepository, UsersService } from './users.ts';

/**
 * Signing in to the dashboard through the operator's OpenID provider (docs/operations.md,
 * "Single sign-on"). The provider proves who the person is (its ID token, checked by the
 * relying party); this decides which user that is: the one already linked to the provider's
 * (issuer, subject), else the enabled user with the token's verified address (and the two are
 * linked from then on), else, with open sign-up, a new account on the tester plan.
 */

/** How long a browser may take at the provider before the attempt is forgotten. */
export const ATTEMPT_TTL_MS = 10 * 60 * 1000;

/** Why a sign-in through the provider was refused: audited as the `reason` of `user.sign_in_failed`. */
export type OidcRefusalReason =
  /** The callback's `state` names no attempt: never made, already used (a replayed callback), or forgotten. */
  | 'attempt_unknown'
  /** The attempt is older than ATTEMPT_TTL_MS. */
  | 'attempt_expired'
  /** The callback's `state` is not the one this browser was sent away with. */
  | 'state_mismatch'
  /** The provider answered with an error (`error=access_denied`, …). */
  | 'provider_error'
  /** The provider could not be reached, or answered nothing usable. */
  | 'provider_down'
  /** The provider refused the code (replayed, expired) at its token endpoint. */
  | 'code_refused'
  /** The ID token failed a check (signature, issuer, audience, expiry, nonce). */
  | 'token_invalid'
  | 'email_missing'
  | 'email_unverified'
  | 'domain_not_allowed'
  /** No enabled user has the address, and open sign-up is off. */
  | 'no_account'
  /** The user (or their account) is disabled. */
  | 'user_disabled';

/** A refused sign-in through the provider: the reason, and what the page says. */
export class OidcRefusal extends Error {
  readonly reason: OidcRefusalReason;
  /** The address the provider vouched for, when the refusal concerns it. */
  readonly email: string | undefined;

  /** `cause`: the failure behind it (the provider's error), for the log, never the page. */
  constructor(reason: OidcRefusalReason, message: string, email?: string, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = 'OidcRefusal';
    this.reason = reason;
    this.email = email;
  }
}

/** What the relying party keeps of an attempt between sending the browser away and its return. */
export interface OidcAttempt {
  state: string;
  nonce: string;
  codeVerifier: string;
}

/** What an ID token, checked by the relying party, says of the person. */
export interface OidcIdentity {
  issuer: string;
  subject: string;
  email: string | undefined;
  /** `email_verified` (or Entra ID's `xms_edov`) was `true`. */
  emailVerified: boolean;
  name: string | undefined;
}

/** The operator's OpenID provider, as the relying party talks to it (src/sso/oidc-relying-party.ts). */
export interface IdentityProvider {
  /** The provider's name on the sign-in button. */
  readonly displayName: string;
  /** A new attempt's secrets and the authorization URL carrying them; `provider_down` when discovery fails. */
  begin(): Promise<OidcAttempt & { url: string }>;
  /** The callback checked against the attempt, the code exchanged and the ID token verified; an OidcRefusal otherwise. */
  finish(callbackUrl: URL, attempt: OidcAttempt): Promise<OidcIdentity>;
}

/** An attempt as stored: its `state` only as a hash. */
export interface StoredAttempt {
  state_hash: string;
  nonce: string;
  code_verifier: string;
  next_path: string;
  created_at: string;
  expires_at: string;
}

/** Where links and attempts are kept (migration 033). */
export interface OidcRepository {
  /** Stores an attempt, and forgets those expired before `now`. */
  insertAttempt(attempt: StoredAttempt, now: string): Promise<void>;
  /** Takes (deletes) the attempt: only one caller ever gets it. */
  takeAttempt(stateHash: string): Promise<StoredAttempt | undefined>;
  findLinkedUser(issuer: string, subject: string): Promise<string | undefined>;
  link(issuer: string, subject: string, userId: string, at: string): Promise<void>;
}

export interface OidcSignInOptions {
  provider: IdentityProvider;
  repo: OidcRepository;
  users: UsersService;
  usersRepo: Pick<UsersRepository, 'findUser' | 'findUserByEmail'>;
  accounts: Pick<AccountsService, 'getAccount'>;
  /** Lower-cased domains whose addresses may sign in; anyone's when empty. */
  emailDomains: string[];
  /** Open sign-up: a verified address no user has opens a new account. */
  signup: () => boolean;
  /** The plan a new account opened through the provider starts on (TOLLWATCH_SIGN_UP_PLAN). */
  signUpPlan: string;
  now?: () => Date;
}

/** Who signed in, and how this sign-in found them. */
export interface OidcSignedIn {
  user: User;
  /** `linked`: by (issuer, subject); `email`: by address, linked now; `signed_up`: a new account. */
  matched: 'linked' | 'email' | 'signed_up';
}

export class OidcSignIn {
  readonly displayName: string;
  private readonly options: OidcSignInOptions;
  private readonly now: () => Date;

  constructor(options: OidcSignInOptions) {
    this.options = options;
    this.displayName = options.provider.displayName;
    this.now = options.now ?? (() => new Date());
  }

  /** Starts an attempt: the URL to send the browser to, and the `state` it must come back with. */
  async begin(nextPath: string): Promise<{ url: string; state: string }> {
    const attempt = await this.options.provider.begin();
    const now = this.now();
    await this.options.repo.insertAttempt(
      {
        state_hash: hashSecret(attempt.state),
        nonce: attempt.nonce,
        code_verifier: attempt.codeVerifier,
        next_path: nextPath,
        created_at: now.toISOString(),
        expires_at: new Date(now.getTime() + ATTEMPT_TTL_MS).toISOString(),
      },
      now.toISOString(),
    );
    return { url: attempt.url, state: attempt.state };
  }

  /**
   * Completes an attempt from the provider's callback: `browserState` is the `state` this
   * browser was sent away with (its cookie), so a callback begun in another browser (a
   * planted sign-in) is refused. The attempt is spent whatever follows.
   */
  async complete(callbackUrl: URL, browserState: string | undefined): Promise<OidcSignedIn & { nextPath: string }> {
    const state = callbackUrl.searchParams.get('state') ?? '';
    const stored = state === '' ? undefined : await this.options.repo.takeAttempt(hashSecret(state));
    const fromThisBrowser = browserState !== undefined && browserState === state;
    // A browser still holding an attempt of its own but arriving with another state had its
    // callback changed; one holding none (a reload of a used callback) simply came back twice.
    if (!fromThisBrowser && (stored || browserState !== undefined)) {
      throw new OidcRefusal('state_mismatch', 'This sign-in did not start in this browser, or its address was changed. Start again from the sign-in page.');
    }
    if (!stored) throw new OidcRefusal('attempt_unknown', 'This sign-in was already used or is unknown. Start again from the sign-in page.');
    if (stored.expires_at <= this.now().toISOString()) throw new OidcRefusal('attempt_expired', 'This sign-in took too long and has expired. Start again from the sign-in page.');
    const identity = await this.options.provider.finish(callbackUrl, { state, nonce: stored.nonce, codeVerifier: stored.code_verifier });
    return { ...(await this.userFor(identity)), nextPath: stored.next_path };
  }

  /** The user an identity the provider vouched for signs in as (the rules of the class comment). */
  async userFor(identity: OidcIdentity): Promise<OidcSignedIn> {
    const email = identity.email?.trim().toLowerCase();
    if (!email) throw new OidcRefusal('email_missing', 'Your provider did not say which email address is yours, so we cannot tell which user you are.');
    if (!identity.emailVerified) {
      throw new OidcRefusal('email_unverified', `Your provider has not verified the address ${email}. Verify it with your provider, then sign in again.`, email);
    }
    const domain = email.slice(email.lastIndexOf('@') + 1);
    if (this.options.emailDomains.length > 0 && !this.options.emailDomains.includes(domain)) {
      throw new OidcRefusal('domain_not_allowed', `Addresses at ${domain} may not sign in here.`, email);
    }
    const linkedId = await this.options.repo.findLinkedUser(identity.issuer, identity.subject);
    const linked = linkedId === undefined ? undefined : await this.options.usersRepo.findUser(linkedId);
    if (linked) return { user: await this.enabled(linked, email), matched: 'linked' };
    const byEmail = await this.options.usersRepo.findUserByEmail(email);
    if (byEmail) {
      const user = await this.enabled(byEmail, email);
      await this.options.repo.link(identity.issuer, identity.subject, user.user_id, this.now().toISOString());
      return { user, matched: 'email' };
    }
    if (!this.options.signup()) throw new OidcRefusal('no_account', `There is no account for ${email}. Ask an owner of your account, or whoever runs this Tollwatch, to invite you.`, email);
    const user = await this.options.users.openAccount({ accountName: accountNameFor(identity, email), plan: this.options.signUpPlan, email, passwordHash: null }, { via: 'oidc', plan: this.options.signUpPlan });
    await this.options.repo.link(identity.issuer, identity.subject, user.user_id, this.now().toISOString());
    return { user, matched: 'signed_up' };
  }

  private async enabled(user: User, email: string): Promise<User> {
    const accountDisabled = user.account_id !== null && (await this.options.accounts.getAccount(user.account_id)).disabled;
    if (user.disabled || accountDisabled) throw new OidcRefusal('user_disabled', `The user ${email} is disabled. Ask an owner of your account, or whoever runs this Tollwatch.`, email);
    return user;
  }
}

/** A new account's name: the person's name when the provider gives one, else their address. */
function accountNameFor(identity: OidcIdentity, email: string): string {
  const name = identity.name?.trim();
  return (name && name.length <= 200 ? name : email).slice(0, 200);
}


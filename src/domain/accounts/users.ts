import { randomBytes, randomUUID } from 'node:crypto';
import type { Account, AccountsService } from './accounts.ts';
import { readableTime } from '../readable-time.ts';
import { NO_AUDIT, type AuditAction, type AuditTrail } from './audit.ts';
import { isMailableAddress } from './email-address.ts';
import { ServiceError } from '../errors.ts';
import type { Mailer } from '../alerts/integrations.ts';
import { checkPasswordRules, decoyHash, hashPassword, needsRehash, passwordMatches } from './passwords.ts';
import { hashSecret, INVITATION_TOKEN_PREFIX } from './secrets.ts';

/**
 * The people who sign in to the dashboard (docs/dashboard.md). An account's users are its
 * owners (who manage clients) and members (who read); operators belong to no account and run
 * the service. Nobody chooses a password before an operator's one-time link: an invitation,
 * or a reset, both stored only as the hash of their token and good once, until they expire.
 */

export const USER_ROLES = ['owner', 'member', 'operator'] as const;
export type UserRole = (typeof USER_ROLES)[number];

export interface User {
  user_id: string;
  /** null for operators, who belong to no account. */
  account_id: string | null;
  /** Lower-cased; unique across the service. */
  email: string;
  role: UserRole;
  /** null until the first invitation is used. */
  password_hash: string | null;
  disabled: boolean;
  created_at: string;
}

/** A user as listed: never the password hash. */
export type UserView = Omit<User, 'password_hash'> & { password_set: boolean };

export type InvitationPurpose = 'invite' | 'reset';

export interface Invitation {
  token_hash: string;
  user_id: string;
  purpose: InvitationPurpose;
  created_at: string;
  expires_at: string;
  used_at: string | null;
}

/** Where users and their one-time links are kept. */
export interface UsersRepository {
  insertUser(user: User): Promise<void>;
  findUser(userId: string): Promise<User | undefined>;
  findUserByEmail(email: string): Promise<User | undefined>;
  /** An account's users, or the operators when `accountId` is null; oldest first. */
  listUsers(accountId: string | null): Promise<User[]>;
  setDisabled(userId: string, disabled: boolean): Promise<boolean>;
  setRole(userId: string, role: UserRole): Promise<boolean>;
  setPasswordHash(userId: string, hash: string): Promise<void>;
  insertInvitation(invitation: Invitation): Promise<void>;
  findInvitation(tokenHash: string): Promise<Invitation | undefined>;
  /** Marks an unused link used at `at`; false if it was used already (two tabs, a replay). */
  useInvitation(tokenHash: string, at: string): Promise<boolean>;
  /** Marks every unused link of a user used: a new link replaces the old ones. */
  retireInvitations(userId: string, at: string): Promise<void>;
  /**
   * A stand-in: what an account's list shows of an invitation of an address a user elsewhere
   * has. Never signed in with, never mailed; `setRole` and `setDisabled` change it as a user.
   */
  insertStandIn(standIn: User & { account_id: string }): Promise<void>;
  findStandIn(userId: string): Promise<User | undefined>;
  listStandIns(accountId: string): Promise<User[]>;
}

/** Ends a user's sessions; the sessions service, given here so that users.ts needs no session code. */
export type EndSessions = (userId: string) => Promise<void>;

/** A one-time link to set a password, shown once. */
export interface IssuedLink {
  user: UserView;
  link: string;
  expires_at: string;
}

/** How long an invitation or reset link works: 72 hours. */
export const INVITATION_TTL_MS = 72 * 3600 * 1000;
/** How long a link a user asked for themselves works: its mail is read at once, or asked for again. */
export const SELF_RESET_TTL_MS = 3600 * 1000;
/**
 * The shape of an address worth looking up: loose, since a user made before the rule for new
 * addresses (isMailableAddress) tightened must still sign in.
 */
const EMAIL = /^[^\s@]{1,64}@[^\s@]{1,255}$/;
const TOKEN = new RegExp(`^${INVITATION_TOKEN_PREFIX}[A-Za-z0-9_-]{43}$`);

export interface UsersServiceOptions {
  repo: UsersRepository;
  accounts: AccountsService;
  audit?: AuditTrail;
  endSessions: EndSessions;
  /** Links are `<publicUrl>/invitations/<token>`. */
  publicUrl: string;
  /** Tells users what happens to their sign-in; none configured, nothing is sent. */
  mailer?: Mailer;
  now?: () => Date;
}

export class UsersService {
  private readonly repo: UsersRepository;
  private readonly accounts: AccountsService;
  private readonly audit: AuditTrail;
  private readonly endSessions: EndSessions;
  private readonly publicUrl: string;
  private readonly mailer: Mailer | undefined;
  private readonly now: () => Date;

  constructor(options: UsersServiceOptions) {
    this.repo = options.repo;
    this.accounts = options.accounts;
    this.audit = options.audit ?? NO_AUDIT;
    this.endSessions = options.endSessions;
    this.publicUrl = options.publicUrl;
    this.mailer = options.mailer;
    this.now = options.now ?? (() => new Date());
  }

  /**
   * Tells the user of `email`, if there is one, that sign-in to it is locked after repeated wrong
   * passwords, and until when. Answers whether a mail went out: none without a user or SMTP.
   */
  async warnOfSignInLock(email: string, ip: string, retryAfterSeconds: number): Promise<boolean> {
    if (!this.mailer?.configured || !EMAIL.test(email.trim())) return false;
    const user = await this.repo.findUserByEmail(email.trim().toLowerCase());
    if (!user || user.disabled) return false;
    const until = readableTime(new Date(this.now().getTime() + retryAfterSeconds * 1000));
    await this.mailer.send({
      to: user.email,
      subject: 'Tollwatch: sign-in to your account is locked',
      text: [
        `Someone failed to sign in to Tollwatch as ${user.email}${await this.ofAccount(user.account_id)} too many times, most recently from ${ip}.`,
        `Sign-in as ${user.email} is refused until ${until}, even with the right password.`,
        '',
        'If that was you, wait until then. If not, someone is guessing your password: ask your operator for a',
        'password reset link, which also lifts the lock, and choose a password you use nowhere else.',
      ].join('\n'),
    });
    return true;
  }

  /**
   * Mails every enabled owner of an account (what the service did to the account's things, such
   * as an integration it disabled). Answers how many were mailed: none without SMTP or owners.
   */
  async tellOwners(accountId: string, message: { subject: string; text: string }): Promise<number> {
    if (!this.mailer?.configured) return 0;
    const owners = (await this.repo.listUsers(accountId)).filter((user) => user.role === 'owner' && !user.disabled);
    if (owners.length === 0) return 0;
    // An owner may read mail for several accounts: the first line says which one this is about.
    const text = `About your Tollwatch account${await this.ofAccount(accountId, '')}.\n\n${message.text}`;
    for (const owner of owners) await this.mailer.send({ to: owner.email, subject: message.subject, text });
    return owners.length;
  }

  /**
   * "Forgot your password": mails a one-time link (an hour) to set a new one, if `email` is an
   * enabled user's and this server sends mail; otherwise nothing. Never says which: the caller
   * answers the same either way, and runs this off the answer's path so its time tells nothing.
   */
  async sendPasswordReset(email: string, ip: string): Promise<boolean> {
    if (!this.mailer?.configured || !EMAIL.test(email.trim())) return false;
    const user = await this.repo.findUserByEmail(email.trim().toLowerCase());
    if (!user || user.disabled) return false;
    await this.repo.retireInvitations(user.user_id, this.now().toISOString());
    await this.record('user.password_reset', 'self', user, { ip });
    const { link, expires_at } = await this.issueLink(user, 'reset', SELF_RESET_TTL_MS);
    await this.mailer.send({
      to: user.email,
      subject: 'Tollwatch: set a new password',
      text: [
        `Someone (from ${ip}) asked to set a new password for ${user.email}${await this.ofAccount(user.account_id)} on Tollwatch.`,
        '',
        `To set one, open this link before ${readableTime(expires_at)} (it works once):\n${link}`,
        '',
        'If that was not you, ignore this mail: your password stays as it is.',
      ].join('\n'),
    });
    return true;
  }

  /** Creates a user of an account (or an operator, with no account) and its invitation link. */
  async invite(input: { accountId: string | null; email: string; role: UserRole }, actor = 'operator'): Promise<IssuedLink> {
    const user = await this.newUser(input);
    if (await this.repo.findUserByEmail(user.email)) throw emailTaken();
    return this.storeInvitation(user, newLinkToken(), actor);
  }

  /** The user an invitation would make, checked, not yet stored. */
  private async newUser(input: { accountId: string | null; email: string; role: UserRole }): Promise<User> {
    const email = validEmail(input.email);
    if (!USER_ROLES.includes(input.role)) throw new ServiceError('validation_failed', 'role must be owner, member or operator', [{ field: 'role', message: 'must be owner, member or operator' }]);
    if ((input.role === 'operator') !== (input.accountId === null)) {
      throw new ServiceError('validation_failed', 'an operator belongs to no account, and every other user to one', [{ field: 'role', message: 'operator exactly when no account is named' }]);
    }
    if (input.accountId !== null) await this.accounts.getAccount(input.accountId);
    return { user_id: randomUUID(), account_id: input.accountId, email, role: input.role, password_hash: null, disabled: false, created_at: this.now().toISOString() };
  }

  /** Stores a new user and its invitation under `token`, valid until `expires` (the mailed link says when). */
  private async storeInvitation(user: User, token: string, actor: string, expires?: string): Promise<IssuedLink> {
    await this.repo.insertUser(user);
    await this.record('user.invited', actor, user, { role: user.role });
    return this.issueLink(user, 'invite', INVITATION_TTL_MS, token, expires);
  }

  /** A new one-time link for a user who lost their password; the old links stop working. */
  async resetPassword(userId: string, actor = 'operator'): Promise<IssuedLink> {
    const user = await this.getUser(userId);
    await this.repo.retireInvitations(user.user_id, this.now().toISOString());
    await this.record('user.password_reset', actor, user);
    return this.issueLink(user, 'reset');
  }

  /** What a link is for, while it still works; `not_found` otherwise (never why). */
  async openInvitation(token: string): Promise<{ invitation: Invitation; user: User }> {
    const found = TOKEN.test(token) ? await this.repo.findInvitation(hashSecret(token)) : undefined;
    const user = found && (await this.repo.findUser(found.user_id));
    if (!found || !user || found.used_at !== null || found.expires_at <= this.now().toISOString() || user.disabled) {
      throw new ServiceError('not_found', 'this link is unknown, used or expired; ask for a new one');
    }
    return { invitation: found, user };
  }

  /** Sets the password through a link, once; every session of the user ends (a reset means someone may know the old one). */
  async acceptInvitation(token: string, password: string): Promise<UserView> {
    checkPasswordRules(password);
    const { invitation, user } = await this.openInvitation(token);
    if (!(await this.repo.useInvitation(invitation.token_hash, this.now().toISOString()))) {
      throw new ServiceError('not_found', 'this link is unknown, used or expired; ask for a new one');
    }
    await this.repo.setPasswordHash(user.user_id, await hashPassword(password));
    await this.endSessions(user.user_id);
    await this.record('user.password_set', `user:${user.user_id}`, user, { via: invitation.purpose });
    return { ...viewOf(user), password_set: true };
  }

  /**
   * The user these credentials name, or undefined: unknown email, wrong password, no password
   * yet, disabled user or disabled account are one refusal, in about the same time.
   */
  async authenticate(email: string, password: string): Promise<User | undefined> {
    const user = EMAIL.test(email.trim()) ? await this.repo.findUserByEmail(email.trim().toLowerCase()) : undefined;
    const matches = await passwordMatches(password, user?.password_hash ?? (await decoyHash()));
    if (!user || !user.password_hash || !matches || user.disabled) return undefined;
    if (user.account_id !== null && (await this.accounts.getAccount(user.account_id)).disabled) return undefined;
    // Raised parameters take effect at each user's next sign-in.
    if (needsRehash(user.password_hash)) await this.repo.setPasswordHash(user.user_id, await hashPassword(password));
    return user;
  }

  /** Whether an address is already a user's (or an operator's): sign-up mails its owner instead. */
  async emailTaken(email: string): Promise<boolean> {
    return (await this.repo.findUserByEmail(email.trim().toLowerCase())) !== undefined;
  }

  /**
   * A confirmed sign-up (domain/accounts/sign-ups.ts): a new account on `plan`, its first user
   * its owner, with the password hashed when the person asked. `validation_failed` if the
   * address became a user's since.
   */
  async createSignedUpOwner(input: { accountName: string; plan: string; email: string; passwordHash: string }, ip: string | null): Promise<User> {
    return this.openAccount({ ...input, email: validEmail(input.email) }, { plan: input.plan, ip });
  }

  /**
   * A new account on `plan` with `email` its owner: a confirmed sign-up with a password, or
   * single sign-on (`passwordHash` null), where the provider vouched for the address.
   */
  async openAccount(input: { accountName: string; plan: string; email: string; passwordHash: string | null }, detail: Record<string, unknown>): Promise<User> {
    if (await this.repo.findUserByEmail(input.email)) throw emailTaken();
    // The account's creator is the user about to exist, so the trail names them from the first row.
    const userId = randomUUID();
    const account: Account = await this.accounts.createAccount({ name: input.accountName, plan: input.plan }, `user:${userId}`);
    const user: User = { user_id: userId, account_id: account.account_id, email: input.email, role: 'owner', password_hash: input.passwordHash, disabled: false, created_at: this.now().toISOString() };
    await this.repo.insertUser(user);
    await this.record('user.signed_up', `user:${user.user_id}`, user, detail);
    return user;
  }

  async setDisabled(userId: string, disabled: boolean, actor = 'operator'): Promise<UserView> {
    return this.changeDisabled(await this.getUser(userId), disabled, actor);
  }

  private async changeDisabled(user: User, disabled: boolean, actor: string): Promise<UserView> {
    const userId = user.user_id;
    await this.repo.setDisabled(userId, disabled);
    // At once, not at the sessions' expiry: a disabled user is signed out everywhere.
    if (disabled) await this.endSessions(userId);
    await this.record(disabled ? 'user.disabled' : 'user.enabled', actor, user);
    return viewOf({ ...user, disabled });
  }

  /**
   * An owner invites a teammate to their own account, as owner or member: the invitation link
   * is mailed to them where the server sends mail (answered `mailed: true`), and otherwise
   * answered for the owner to pass on. The mail goes before anything is stored, so a mail server
   * that refuses it leaves nothing behind (`mail_unavailable`, and a retry starts afresh).
   *
   * An address that already belongs to a user of another account (or an operator) is answered
   * as any other where mail is sent, and listed as invited (a stand-in), so neither the form nor
   * the list tells an owner whether an address has an account here; that user is mailed that
   * someone tried, and is given nothing. Where no mail is sent the link must be shown, and there
   * is none to show for them: refused as taken.
   */
  async inviteTeammate(owner: User, input: { email: string; role: string }): Promise<TeammateInvitation> {
    const role = teammateRole(input.role);
    if (owner.role !== 'owner' || owner.account_id === null) throw new ServiceError('not_found', 'only an account’s owners invite its users');
    const user = await this.newUser({ accountId: owner.account_id, email: input.email, role });
    const existing = await this.repo.findUserByEmail(user.email);
    const token = newLinkToken();
    const expires_at = new Date(this.now().getTime() + INVITATION_TTL_MS).toISOString();
    const team = await this.team(owner.account_id);
    if (team.some((u) => u.email === user.email) || (existing && !this.mailer?.configured)) throw emailTaken();
    if (existing) {
      await this.mailOrRefuse({
        to: existing.email,
        subject: 'Tollwatch: an invitation for an address that has an account',
        text: [
          `${owner.email} tried to invite ${existing.email} to their Tollwatch account${await this.ofAccount(owner.account_id, '')} as ${role}.`,
          '',
          'This address already has a Tollwatch account, and an address belongs to one account only, so nothing changed.',
          'If you want to join theirs, ask them to invite another of your addresses. If you do not know them, ignore this mail.',
        ].join('\n'),
      });
      // Listed as invited, as an unknown address would be; it gives nobody anything.
      const standIn = { ...user, account_id: owner.account_id };
      await this.repo.insertStandIn(standIn);
      await this.record('user.invited', `user:${owner.user_id}`, standIn, { role });
      return { email: user.email, expires_at, mailed: true };
    }
    if (!this.mailer?.configured) {
      const issued = await this.storeInvitation(user, token, `user:${owner.user_id}`);
      return { email: user.email, expires_at: issued.expires_at, mailed: false, link: issued.link };
    }
    await this.mailOrRefuse({
      to: user.email,
      subject: 'Tollwatch: you are invited',
      text: [
        `${owner.email} invited you to their Tollwatch account${await this.ofAccount(owner.account_id, '')} as ${role}.`,
        '',
        `To choose a password and sign in, open this link before ${readableTime(expires_at)} (it works once):\n${this.linkOf(token)}`,
      ].join('\n'),
    });
    await this.storeInvitation(user, token, `user:${owner.user_id}`, expires_at);
    return { email: user.email, expires_at, mailed: true };
  }

  private async mailOrRefuse(message: { to: string; subject: string; text: string }): Promise<void> {
    try {
      await this.mailer!.send(message);
    } catch {
      throw new ServiceError('mail_unavailable', 'the mail server did not take the invitation; nothing was saved, try again later');
    }
  }

  /**
   * An owner changes a teammate's role (owner or member). Never their own: so the account keeps
   * an owner whatever owners do, the one acting.
   */
  async setTeammateRole(owner: User, userId: string, role: string): Promise<UserView> {
    const teammate = await this.teammateOf(owner, userId);
    const wanted = teammateRole(role);
    await this.repo.setRole(teammate.user_id, wanted);
    await this.record('user.role_changed', `user:${owner.user_id}`, teammate, { from: teammate.role, to: wanted });
    return viewOf({ ...teammate, role: wanted });
  }

  /** An owner removes a teammate: disabled (signed out everywhere at once), kept for the audit trail. */
  async removeTeammate(owner: User, userId: string): Promise<UserView> {
    const teammate = await this.teammateOf(owner, userId);
    return this.changeDisabled(teammate, true, `user:${owner.user_id}`);
  }

  /** The account named in a mail's sentence (` "Acme Ltd"`): one address may be a user of one account, but a person reads many mails. */
  private async ofAccount(accountId: string | null, before = ' of account'): Promise<string> {
    if (accountId === null) return '';
    const account = await this.accounts.getAccount(accountId);
    return `${before} "${account.name}"`;
  }

  /** Another user of the owner's own account; `not_found` for anyone else, the owner included. */
  private async teammateOf(owner: User, userId: string): Promise<User> {
    const user = (await this.repo.findUser(userId)) ?? (await this.repo.findStandIn(userId));
    if (owner.role !== 'owner' || !user || user.account_id === null || user.account_id !== owner.account_id || user.user_id === owner.user_id) {
      throw new ServiceError('not_found', 'no such teammate');
    }
    return user;
  }

  /** An account's users as its own pages list them: its invitations of addresses elsewhere among them, as invited. */
  async team(accountId: string): Promise<UserView[]> {
    const [users, standIns] = await Promise.all([this.repo.listUsers(accountId), this.repo.listStandIns(accountId)]);
    return [...users, ...standIns].sort((a, b) => a.created_at.localeCompare(b.created_at) || a.user_id.localeCompare(b.user_id)).map(viewOf);
  }

  async list(accountId: string | null): Promise<UserView[]> {
    if (accountId !== null) await this.accounts.getAccount(accountId);
    return (await this.repo.listUsers(accountId)).map(viewOf);
  }

  /** The user, or `not_found`. */
  async getUser(userId: string): Promise<User> {
    const user = await this.repo.findUser(userId);
    if (!user) throw new ServiceError('not_found', 'no such user');
    return user;
  }

  /** Records a user's own action (sign-in, sign-out everywhere) in the audit trail, with `detail` (a sign-in's `method`). */
  recordOwnAction(action: 'user.signed_in' | 'user.signed_out_everywhere', user: User, ip: string | null, detail: Record<string, unknown> = {}): Promise<void> {
    return this.audit.record({ action, actor: `user:${user.user_id}`, accountId: user.account_id, ip, detail: { user_id: user.user_id, ...detail } });
  }

  private async issueLink(user: User, purpose: InvitationPurpose, ttlMs = INVITATION_TTL_MS, token = newLinkToken(), expires = new Date(this.now().getTime() + ttlMs).toISOString()): Promise<IssuedLink> {
    await this.repo.insertInvitation({ token_hash: hashSecret(token), user_id: user.user_id, purpose, created_at: this.now().toISOString(), expires_at: expires, used_at: null });
    return { user: viewOf(user), link: this.linkOf(token), expires_at: expires };
  }

  private linkOf(token: string): string {
    return `${this.publicUrl}/invitations/${token}`;
  }

  private record(action: AuditAction, actor: string, user: User, detail: Record<string, unknown> = {}) {
    return this.audit.record({ action, actor, accountId: user.account_id, detail: { user_id: user.user_id, email: user.email, ...detail } });
  }
}

function newLinkToken(): string {
  return `${INVITATION_TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`;
}

function emailTaken(): ServiceError {
  return new ServiceError('validation_failed', 'a user with this email exists', [{ field: 'email', message: 'is taken' }]);
}

/** What an owner is told of a teammate's invitation: the link itself only where no mail is sent. */
export type TeammateInvitation = { email: string; expires_at: string } & ({ mailed: true } | { mailed: false; link: string });

/** A trimmed, lower-cased email address of a form mail servers take (isMailableAddress); the link proves it works. */
export function validEmail(raw: string): string {
  const email = raw.trim().toLowerCase();
  if (!isMailableAddress(email)) throw new ServiceError('validation_failed', 'not an email address', [{ field: 'email', message: 'must be an email address' }]);
  return email;
}

export function viewOf(user: User): UserView {
  const { password_hash, ...rest } = user;
  return { ...rest, password_set: password_hash !== null };
}

/** The roles an owner may give: an owner's account's users are owners or members, never operators. */
function teammateRole(role: string): Exclude<UserRole, 'operator'> {
  if (role !== 'owner' && role !== 'member') throw new ServiceError('validation_failed', 'role must be owner or member', [{ field: 'role', message: 'must be owner or member' }]);
  return role;
}

import { randomBytes } from 'node:crypto';
import type { KeySealer } from './key-sealing.ts';
import { hashSecret } from './secrets.ts';
import type { User } from './users.ts';

/**
 * Dashboard sessions, kept in the store (docs/dashboard.md, "Sessions"). The browser holds a
 * random id; the store holds only its hash, so a copy of the store signs no one in, and ending
 * sessions (sign out everywhere, a disabled user, a new password) takes effect at the next
 * request on every instance. A session ends when idle too long or when it reaches its absolute
 * age, whichever comes first.
 */

export interface Session {
  id_hash: string;
  user_id: string;
  created_at: string;
  last_seen_at: string;
  /** The absolute end: created_at plus the absolute lifetime. */
  expires_at: string;
}

export interface SessionsRepository {
  insertSession(session: Session): Promise<void>;
  /** The session with its user as stored now. */
  findSession(idHash: string): Promise<{ session: Session; user: User } | undefined>;
  touchSession(idHash: string, at: string): Promise<void>;
  deleteSession(idHash: string): Promise<void>;
  deleteSessionsOf(userId: string): Promise<void>;
  /** Removes a user's sessions that ended (absolute end before `now`, or last seen before `idleBefore`). */
  deleteEndedSessionsOf(userId: string, now: string, idleBefore: string): Promise<void>;
  /** Keeps one sealed view with the session, replacing any kept before. */
  holdView(idHash: string, sealed: string, at: string): Promise<void>;
  /** The view kept with the session, cleared in the same step, so only one request gets it. */
  takeView(idHash: string): Promise<{ sealed: string; at: string } | undefined>;
}

/**
 * How long a held view waits for the page it was held for: a redirect follows at once, so a
 * view not taken by then was never going to be (the tab was closed).
 */
const HELD_VIEW_MS = 10 * 60_000;

export interface SessionLifetimes {
  /** A session unused this long ends. */
  idleSeconds: number;
  /** A session ends this long after sign-in, however busy. */
  absoluteSeconds: number;
}

/** Recording every request's time would be a write per page; to the minute (or a quarter of a shorter idle bound) is enough. */
const TOUCH_RESOLUTION_MS = 60_000;

export class Sessions {
  private readonly repo: SessionsRepository;
  private readonly lifetimes: SessionLifetimes;
  private readonly now: () => Date;
  private readonly sealer: KeySealer | undefined;

  constructor(repo: SessionsRepository, lifetimes: SessionLifetimes, now: () => Date = () => new Date(), sealer?: KeySealer) {
    this.repo = repo;
    this.lifetimes = lifetimes;
    this.now = now;
    this.sealer = sealer;
  }

  /**
   * Keeps what the page after a form's redirect shows once (post/redirect/get): a new secret is
   * never in a URL, and reloading that page, or going back to it, shows it no more and repeats
   * nothing. Sealed at rest like every secret of the store; gone with the session.
   */
  async hold(id: string, view: Record<string, unknown>): Promise<void> {
    const idHash = hashSecret(id);
    const text = JSON.stringify(view);
    await this.repo.holdView(idHash, this.sealer ? this.sealer.seal(text, heldContext(idHash)) : text, this.now().toISOString());
  }

  /** The view held for this session, once; undefined when none is, or it waited too long. */
  async takeHeld(id: string): Promise<Record<string, unknown> | undefined> {
    const idHash = hashSecret(id);
    const held = await this.repo.takeView(idHash);
    if (!held || this.now().getTime() - Date.parse(held.at) > HELD_VIEW_MS) return undefined;
    return JSON.parse(this.sealer ? this.sealer.open(held.sealed, heldContext(idHash)) : held.sealed) as Record<string, unknown>;
  }

  /** A new session for a user who just proved who they are; its id exists only in this answer. */
  async start(userId: string): Promise<string> {
    const id = `twd_${randomBytes(32).toString('base64url')}`;
    const now = this.now();
    // Sessions are removed when next presented; one never presented again goes at its user's next sign-in.
    await this.repo.deleteEndedSessionsOf(userId, now.toISOString(), new Date(now.getTime() - this.lifetimes.idleSeconds * 1000).toISOString());
    await this.repo.insertSession({
      id_hash: hashSecret(id),
      user_id: userId,
      created_at: now.toISOString(),
      last_seen_at: now.toISOString(),
      expires_at: new Date(now.getTime() + this.lifetimes.absoluteSeconds * 1000).toISOString(),
    });
    return id;
  }

  /** The signed-in user of a session id, or undefined when it is unknown, ended, expired or its user disabled. */
  async resume(id: string): Promise<User | undefined> {
    if (!/^twd_[A-Za-z0-9_-]{43}$/.test(id)) return undefined;
    const idHash = hashSecret(id);
    const found = await this.repo.findSession(idHash);
    if (!found) return undefined;
    const now = this.now();
    const idleEnd = Date.parse(found.session.last_seen_at) + this.lifetimes.idleSeconds * 1000;
    if (found.user.disabled || now.toISOString() >= found.session.expires_at || now.getTime() >= idleEnd) {
      await this.repo.deleteSession(idHash);
      return undefined;
    }
    if (now.getTime() - Date.parse(found.session.last_seen_at) >= Math.min(TOUCH_RESOLUTION_MS, (this.lifetimes.idleSeconds * 1000) / 4)) await this.repo.touchSession(idHash, now.toISOString());
    return found.user;
  }

  end(id: string): Promise<void> {
    return this.repo.deleteSession(hashSecret(id));
  }

  /** Every session of the user, on every device. */
  endAll(userId: string): Promise<void> {
    return this.repo.deleteSessionsOf(userId);
  }
}

/** Where a held view's sealed text belongs: sealed for one session, it opens for no other. */
function heldContext(idHash: string): string {
  return `user_sessions/${idHash}/held_view`;
}

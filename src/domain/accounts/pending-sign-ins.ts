import { randomBytes } from 'node:crypto';
import { hashSecret } from './secrets.ts';

/**
 * Sign-ins whose password was right and whose second step is awaited (docs/dashboard.md,
 * "Two-factor sign-in"). The browser holds a random token in a cookie of its own; the store
 * holds only its hash, for five minutes. The token is no session: it opens the second step's
 * page and nothing else, and is spent by the step that succeeds.
 */

export interface PendingSignIn {
  token_hash: string;
  user_id: string;
  /** Where the sign-in was going: a same-site path. */
  next: string;
  /** How the first factor was proved: `password` or `oidc`. */
  method: string;
  created_at: string;
  expires_at: string;
}

export interface PendingSignInsRepository {
  insertPendingSignIn(pending: PendingSignIn): Promise<void>;
  findPendingSignIn(tokenHash: string): Promise<PendingSignIn | undefined>;
  /** Removes it in one statement; false if another request did first. */
  deletePendingSignIn(tokenHash: string): Promise<boolean>;
  deletePendingSignInsOf(userId: string): Promise<void>;
  /** Removes everyone's pending sign-ins that ended before `now`. */
  deleteEndedPendingSignIns(now: string): Promise<void>;
}

/** How long a second step may take. */
export const PENDING_SIGN_IN_SECONDS = 300;
const TOKEN = /^twp_[A-Za-z0-9_-]{43}$/;

export class PendingSignIns {
  private readonly repo: PendingSignInsRepository;
  private readonly now: () => Date;

  constructor(repo: PendingSignInsRepository, now: () => Date = () => new Date()) {
    this.repo = repo;
    this.now = now;
  }

  /** A pending sign-in for a user whose password was right; its token exists only in this answer. */
  async start(userId: string, next: string, method: string): Promise<string> {
    const token = `twp_${randomBytes(32).toString('base64url')}`;
    const now = this.now();
    // One never finished goes at the next sign-in of anyone's that needs a second step.
    await this.repo.deleteEndedPendingSignIns(now.toISOString());
    await this.repo.insertPendingSignIn({
      token_hash: hashSecret(token),
      user_id: userId,
      next,
      method,
      created_at: now.toISOString(),
      expires_at: new Date(now.getTime() + PENDING_SIGN_IN_SECONDS * 1000).toISOString(),
    });
    return token;
  }

  /** The pending sign-in of a token, while it lasts. */
  async open(token: string): Promise<PendingSignIn | undefined> {
    if (!TOKEN.test(token)) return undefined;
    const found = await this.repo.findPendingSignIn(hashSecret(token));
    return found && found.expires_at > this.now().toISOString() ? found : undefined;
  }

  /** Spends the token: true for the one request that did. */
  finish(token: string): Promise<boolean> {
    return this.repo.deletePendingSignIn(hashSecret(token));
  }

  /** Ends every pending sign-in of a user (the operator's reset). */
  endAll(userId: string): Promise<void> {
    return this.repo.deletePendingSignInsOf(userId);
  }
}

import type { Account } from '../domain/accounts/accounts.ts';
import type { User } from '../domain/accounts/users.ts';

/** Who may open a dashboard route (docs/dashboard.md, "Who sees what"). */
export type WebAccess =
  /** The static files: anyone, and no session is read for them. */
  | 'asset'
  /** Anyone: sign-in, invitations, sign-up. */
  | 'public'
  /** Any signed-in user: sign-out, the start page. */
  | 'signed-in'
  /** An account's owners and members: reading the account's pages. */
  | 'account'
  /** An account's owners only: changing its API clients. */
  | 'owner'
  /** Operators only: accounts, plans, the audit trail. */
  | 'operator';

/** What the dashboard's hooks leave on a request (web-session.ts). */
export interface WebState {
  user: User | undefined;
  /** The signed-in user's account; undefined for operators and strangers. */
  account: Account | undefined;
  /** The secret this browser's CSRF token derives from: its session id, or its form cookie. */
  secret: string;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Dashboard routes: who may open them; every dashboard route names one. */
    web?: WebAccess;
    /** Open to a user whose account requires two-factor sign-in before they have set it up: the enrolment pages. */
    twoFactorSetup?: boolean;
  }

  interface FastifyRequest {
    /** Set by the dashboard's hook on every dashboard route. */
    web: WebState;
  }
}

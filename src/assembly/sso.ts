import { OidcSignIn } from '../domain/accounts/oidc-sign-in.ts';
import { OidcAttemptRequests } from '../limits/oidc-attempt-requests.ts';
import { OidcRelyingParty } from '../sso/oidc-relying-party.ts';
import { SqlOidcRepository } from '../store/repositories/oidc-repository.ts';
import { SqlUsersRepository } from '../store/repositories/users-repository.ts';
import { limiterFactoryOf, type AuthAssembly } from './auth.ts';
import type { Foundation } from './foundation.ts';

/** Single sign-on to the dashboard (docs/operations.md, "Single sign-on"). */
export interface SsoAssembly {
  /** Signing in through the operator's OpenID provider; undefined when none is configured. */
  oidcSignIn: OidcSignIn | undefined;
  /** Bounds the attempts begun, per client address and per network. */
  oidcAttemptRequests: OidcAttemptRequests;
}

export function assembleSso(base: Foundation, auth: Pick<AuthAssembly, 'users' | 'accounts'>): SsoAssembly {
  const { config, database } = base;
  const oidcAttemptRequests = new OidcAttemptRequests(limiterFactoryOf(base));
  if (!config.oidc) return { oidcSignIn: undefined, oidcAttemptRequests };
  return {
    oidcAttemptRequests,
    oidcSignIn: new OidcSignIn({
      provider: new OidcRelyingParty(config.oidc),
      repo: new SqlOidcRepository(database.db),
      users: auth.users,
      usersRepo: new SqlUsersRepository(database.db),
      accounts: auth.accounts,
      emailDomains: config.oidc.emailDomains,
      signup: () => config.dashboard.signup,
      signUpPlan: config.dashboard.signUpPlan,
    }),
  };
}

import { OidcSignIn } from '../domain/accounts/oidc-sign-in.ts';
import { OidcRelyingParty } from '../sso/oidc-relying-party.ts';
import { SqlOidcRepository } from '../store/repositories/oidc-repository.ts';
import { SqlUsersRepository } from '../store/repositories/users-repository.ts';
import type { AuthAssembly } from './auth.ts';
import type { Foundation } from './foundation.ts';

/** Single sign-on to the dashboard (docs/operations.md, "Single sign-on"). */
export interface SsoAssembly {
  /** Signing in through the operator's OpenID provider; undefined when none is configured. */
  oidcSignIn: OidcSignIn | undefined;
}

export function assembleSso(base: Foundation, auth: Pick<AuthAssembly, 'users' | 'accounts'>): SsoAssembly {
  const { config, database } = base;
  if (!config.oidc) return { oidcSignIn: undefined };
  return {
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

import type { Account, Client } from '../domain/accounts.ts';
import type { Permission } from '../domain/permissions.ts';
import { InvalidTokenError, type AccessTokens } from './access-tokens.ts';
import { verifyClientSecret, type ClientCredentials } from './client-authentication.ts';
import type { CredentialsCache } from './credentials-cache.ts';

/** Who is calling, established from a token or from Basic credentials. */
export interface Principal {
  account: Account;
  client: Client;
  permissions: ReadonlySet<Permission>;
}

/** Establishes the principal of an `/api` call (docs/api.md §3), checking revocation every time. */
export class ApiAuthenticator {
  private readonly tokens: AccessTokens;
  private readonly credentials: CredentialsCache;

  constructor(tokens: AccessTokens, credentials: CredentialsCache) {
    this.tokens = tokens;
    this.credentials = credentials;
  }

  /** A principal from a bearer token; InvalidTokenError for anything not honoured. */
  async fromBearer(token: string): Promise<Principal> {
    const claims = await this.tokens.verify(token);
    // The signature verified: whose token it is is known, even when it is no longer honoured.
    const subject = { clientId: claims.clientId, accountId: claims.accountId };
    const found = await this.credentials.get(claims.clientId);
    if (!found) throw new InvalidTokenError('client deleted', subject);
    const { client, account } = found;
    if (client.account_id !== claims.accountId) throw new InvalidTokenError('account mismatch', subject);
    // Disabling raises the version too (for good), so it is told first while it lasts.
    if (account.disabled) throw new InvalidTokenError('account disabled', subject);
    if (client.secret_version !== claims.secretVersion) throw new InvalidTokenError('revoked: secret reset or account disabled since issue', subject);
    return { account, client, permissions: new Set(claims.permissions) };
  }

  /** A principal from Basic credentials (client id and secret). */
  async fromBasic(credentials: ClientCredentials): Promise<Principal> {
    const verdict = verifyClientSecret(await this.credentials.get(credentials.clientId), credentials);
    if (!verdict.ok) throw new InvalidTokenError(verdict.reason, verdict.subject);
    return { account: verdict.account, client: verdict.client, permissions: new Set(verdict.client.permissions) };
  }
}

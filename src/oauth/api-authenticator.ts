import type { Account, Client } from '../domain/accounts/accounts.ts';
import type { Permission } from '../domain/accounts/permissions.ts';
import { InvalidTokenError, type AccessTokens } from './access-tokens.ts';
import { verifyClientSecret, type ClientCredentials } from './client-authentication.ts';
import type { CredentialsCache, CredentialsEntry } from './credentials-cache.ts';

/** Who is calling, established from a token or from Basic credentials. */
export interface Principal {
  account: Account;
  client: Client;
  permissions: ReadonlySet<Permission>;
}

/** A token's principal, with what it was checked against. */
interface Admitted {
  principal: Principal;
  kid: string;
  expiresAt: number;
  /** The client and account the revocation checks passed on; valid while the cache still holds this very entry. */
  checked: CredentialsEntry;
}

/** Most tokens whose principal is remembered; as many as verified tokens. */
const ADMITTED_CACHE_SIZE = 10_000;

/** Establishes the principal of an `/api` call (docs/api.md §3), checking revocation every time. */
export class ApiAuthenticator {
  private readonly tokens: AccessTokens;
  private readonly credentials: CredentialsCache;
  private readonly admitted = new Map<string, Admitted>();

  constructor(tokens: AccessTokens, credentials: CredentialsCache) {
    this.tokens = tokens;
    this.credentials = credentials;
  }

  /**
   * The principal of a bearer token admitted before, while nothing about it changed: one map
   * read, then the revocation check reduced to comparisons (its key not retired, its time not
   * up, and the client's cached entry the very one it was checked against: any change to the
   * client or its account, here or announced, or the cache's one-second bound, replaces that
   * entry). Undefined sends the caller to `fromBearer`, which checks everything again.
   */
  admittedBearer(token: string): Principal | undefined {
    const known = this.admitted.get(token);
    if (!known) return undefined;
    if (this.tokens.stillValid(known.kid, known.expiresAt) && this.credentials.fresh(known.principal.client.client_id) === known.checked) return known.principal;
    this.admitted.delete(token);
    return undefined;
  }

  /** A principal from a bearer token; InvalidTokenError for anything not honoured. */
  async fromBearer(token: string): Promise<Principal> {
    const claims = await this.tokens.verify(token);
    // The signature verified: whose token it is is known, even when it is no longer honoured.
    const subject = { clientId: claims.clientId, accountId: claims.accountId };
    const checked = await this.credentials.entry(claims.clientId);
    if (!checked.found) throw new InvalidTokenError('client deleted', subject);
    const { client, account } = checked.found;
    if (client.account_id !== claims.accountId) throw new InvalidTokenError('account mismatch', subject);
    // Disabling raises the version too (for good), so it is told first while it lasts.
    if (account.disabled) throw new InvalidTokenError('account disabled', subject);
    if (client.secret_version !== claims.secretVersion) throw new InvalidTokenError('revoked: secret reset or account disabled since issue', subject);
    const principal = { account, client, permissions: new Set(claims.permissions) };
    const kid = this.tokens.kidOf(token);
    if (kid !== undefined) {
      if (this.admitted.size >= ADMITTED_CACHE_SIZE) this.admitted.clear();
      this.admitted.set(token, { principal, kid, expiresAt: claims.expiresAt, checked });
    }
    return principal;
  }

  /** A principal from Basic credentials (client id and secret). */
  async fromBasic(credentials: ClientCredentials): Promise<Principal> {
    const verdict = verifyClientSecret(await this.credentials.get(credentials.clientId), credentials);
    if (!verdict.ok) throw new InvalidTokenError(verdict.reason, verdict.subject);
    return { account: verdict.account, client: verdict.client, permissions: new Set(verdict.client.permissions) };
  }
}

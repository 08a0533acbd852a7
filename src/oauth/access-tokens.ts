import { randomUUID } from 'node:crypto';
import { SignJWT, errors as joseErrors, jwtVerify, type JWTPayload } from 'jose';
import type { Permission } from '../domain/accounts/permissions.ts';
import { isPermission } from '../domain/accounts/permissions.ts';
import type { SigningKeys } from './signing-keys.ts';
import { MAX_ISSUED_AT_SKEW_SECONDS, MAX_TOKEN_LIFETIME_SECONDS } from './token-lifetime.ts';

/** What a verified access token says. */
export interface AccessClaims {
  clientId: string;
  accountId: string;
  permissions: Permission[];
  /** The client's secret version when the token was issued; a reset bumps it. */
  secretVersion: number;
  expiresAt: number;
}

export interface TokenSettings {
  issuer: string;
  audiences: string[];
  ttlSeconds: number;
}

/** Whose credentials were refused, where that is known for certain (for the audit trail). */
export interface RefusedSubject {
  clientId?: string;
  accountId?: string;
}

/**
 * Thrown for any token or credentials that must not be honoured; the reason is for logs only.
 * `subject` is set only when it was proven (a token whose signature verified, a client id
 * named in credentials); never from the claims of a token that failed verification.
 */
export class InvalidTokenError extends Error {
  readonly subject: RefusedSubject;

  constructor(reason: string, subject: RefusedSubject = {}) {
    super(reason);
    this.name = 'InvalidTokenError';
    this.subject = subject;
  }
}

/** Most verified tokens remembered; one per active client is the usual need. */
const VERIFIED_CACHE_SIZE = 10_000;

/** Issues and verifies the service's signed JWT access tokens (docs/api.md §2). */
export class AccessTokens {
  private readonly keys: SigningKeys;
  private readonly settings: TokenSettings;
  /**
   * Tokens whose signature and claims were already verified, until they expire. A token's
   * bytes cannot change, so re-verifying its signature on every request proves nothing new;
   * revocation is not cached here but checked by the caller on every request.
   */
  private readonly verified = new Map<string, { claims: AccessClaims; kid: string }>();

  constructor(keys: SigningKeys, settings: TokenSettings) {
    this.keys = keys;
    this.settings = settings;
  }

  get ttlSeconds(): number {
    return this.settings.ttlSeconds;
  }

  /** The public keys of every key not yet retired, for the JWKS endpoint. */
  async jwks() {
    await this.keys.refreshIfStale();
    return this.keys.jwks();
  }

  /**
   * The audience a token request settles on, as configured, or undefined when it asks for one
   * this service does not accept. `audience` and RFC 8707's `resource` name it alike (both at
   * once must agree); neither means the first configured audience, the service's own API; a
   * trailing slash names the same audience as none.
   */
  audienceFor(audience: string | undefined, resource: string | undefined): string | undefined {
    const asked = [audience, resource].filter((value): value is string => value !== undefined).map(withoutTrailingSlash);
    if (asked.length === 0) return this.settings.audiences[0];
    if (asked.some((value) => value !== asked[0])) return undefined;
    return this.settings.audiences.find((configured) => withoutTrailingSlash(configured) === asked[0]);
  }

  /** The audience a request without `audience` or `resource` gets. */
  get defaultAudience(): string {
    return this.settings.audiences[0]!;
  }

  /** Signs a token for a client of an account. */
  async issue(input: {
    clientId: string;
    accountId: string;
    permissions: Permission[];
    secretVersion: number;
    audience: string;
  }): Promise<string> {
    // A rotation made elsewhere is picked up here, within the keys' reload bound.
    await this.keys.refreshIfStale();
    const { kid, privateKey } = this.keys.current();
    // RFC 9068 claims: client_id names the client (sub does too: the client acts for itself).
    return new SignJWT({
      client_id: input.clientId,
      scope: input.permissions.join(' '),
      account_id: input.accountId,
      ver: input.secretVersion,
    })
      .setProtectedHeader({ alg: 'ES256', kid, typ: 'at+jwt' })
      .setIssuer(this.settings.issuer)
      .setSubject(input.clientId)
      .setAudience(input.audience)
      .setIssuedAt()
      .setExpirationTime(`${this.settings.ttlSeconds}s`)
      .setJti(randomUUID())
      .sign(privateKey);
  }

  /**
   * Verifies signature, issuer, audience, expiry, the bounds on lifetime and issue time, and
   * shape; revocation is the caller's check.
   */
  async verify(token: string): Promise<AccessClaims> {
    this.refreshKeysInBackground();
    const known = this.verified.get(token);
    // Its key may have retired since (or been removed by re-keying): verified afresh, refused.
    if (known && this.keys.verifies(known.kid)) {
      const { claims } = known;
      if (claims.expiresAt * 1000 > Date.now()) return claims;
      this.verified.delete(token);
      throw new InvalidTokenError('ERR_JWT_EXPIRED', { clientId: claims.clientId, accountId: claims.accountId });
    }
    this.verified.delete(token);
    const verified = await this.verifyAfresh(token);
    if (this.verified.size >= VERIFIED_CACHE_SIZE) this.verified.clear();
    this.verified.set(token, verified);
    return verified.claims;
  }

  /**
   * Whether a token verified earlier, signed by `kid` and expiring at `expiresAt` (seconds), is
   * still good without verifying it again: its key not retired, its time not up. False sends
   * the caller to `verify`, which says why not.
   */
  stillValid(kid: string, expiresAt: number): boolean {
    this.refreshKeysInBackground();
    return expiresAt * 1000 > Date.now() && this.keys.verifies(kid);
  }

  /** The kid of a token `verify` accepted and still remembers. */
  kidOf(token: string): string | undefined {
    return this.verified.get(token)?.kid;
  }

  /**
   * An instance that only verifies must still learn of a rotation, and so of when the old key
   * retires: the keys are read again within their reload bound here too, in the background,
   * so that no request waits on that read (nor on a store that does not answer it).
   */
  private refreshKeysInBackground(): void {
    if (this.keys.stale) void this.keys.refreshIfStale();
  }

  private async verifyAfresh(token: string): Promise<{ claims: AccessClaims; kid: string }> {
    let payload: JWTPayload;
    let kid = '';
    const keyFor = async (header: { kid?: string }) => {
      kid = header.kid ?? '';
      return this.verificationKeyFor(header.kid);
    };
    try {
      ({ payload } = await jwtVerify(token, keyFor, {
        issuer: this.settings.issuer,
        audience: this.settings.audiences,
        algorithms: ['ES256'],
        typ: 'at+jwt',
        requiredClaims: ['iat', 'exp', 'jti', 'sub'],
      }));
    } catch (err) {
      if (err instanceof InvalidTokenError) throw err;
      // jose checks expiry only after the signature, issuer and audience: the payload is ours.
      if (err instanceof joseErrors.JWTExpired) throw new InvalidTokenError(err.code, subjectOf(err.payload));
      if (err instanceof joseErrors.JOSEError) throw new InvalidTokenError(err.code);
      throw err;
    }
    checkTimes(payload);
    // Tokens issued before RFC 9068's client_id named the client in azp; they stay good until they expire.
    const clientId = payload.client_id ?? payload.azp;
    const { account_id, scope, ver, exp } = payload;
    if (typeof clientId !== 'string' || typeof account_id !== 'string' || typeof scope !== 'string') {
      throw new InvalidTokenError('missing claims');
    }
    if (typeof ver !== 'number' || !Number.isInteger(ver) || typeof exp !== 'number') {
      throw new InvalidTokenError('missing claims');
    }
    const claims: AccessClaims = {
      clientId,
      accountId: account_id,
      permissions: scope.split(' ').filter(isPermission) as Permission[],
      secretVersion: ver,
      expiresAt: exp,
    };
    return { claims, kid };
  }

  private async verificationKeyFor(kid: string | undefined) {
    const key = await this.keys.verificationKey(kid);
    if (!key) throw new InvalidTokenError('unknown kid');
    return key;
  }
}

/**
 * Refuses a signed token claiming more than this service ever issues: a lifetime beyond the
 * longest configurable TTL, or an issue time in the future beyond clock skew. Only a leaked or
 * misused key signs such a token; jose checks neither (its maxTokenAge would also stretch
 * `exp` by the skew). The signature verified, so the refusal names its subject.
 */
function checkTimes(payload: JWTPayload): void {
  const { iat, exp } = payload;
  // requiredClaims made jose insist on both, and it refuses a non-numeric one.
  if (typeof iat !== 'number' || typeof exp !== 'number') throw new InvalidTokenError('missing claims');
  const now = Date.now() / 1000;
  if (iat > now + MAX_ISSUED_AT_SKEW_SECONDS) throw new InvalidTokenError('iat in the future', subjectOf(payload));
  if (exp - iat > MAX_TOKEN_LIFETIME_SECONDS) throw new InvalidTokenError('lifetime beyond the maximum', subjectOf(payload));
}

function subjectOf(payload: JWTPayload): RefusedSubject {
  const clientId = payload.client_id ?? payload.azp;
  return {
    ...(typeof clientId === 'string' ? { clientId } : {}),
    ...(typeof payload.account_id === 'string' ? { accountId: payload.account_id } : {}),
  };
}

function withoutTrailingSlash(value: string): string {
  return value.replace(/\/+$/, '');
}

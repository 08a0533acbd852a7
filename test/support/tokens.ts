import { SignJWT, type CryptoKey } from 'jose';
import type { TestAccount } from './harness.ts';

export interface TokenOptions {
  kid: string;
  /** The signing key: the server's own for a genuine token, another one for a forgery. */
  key: CryptoKey;
  scope: string;
  jti?: string;
  /** Seconds since the epoch; now when absent. */
  issuedAt?: number;
  /** Seconds since the epoch, or a jose duration from now; an hour when absent. */
  expiresAt?: number | string;
  /** The claim naming the client: RFC 9068's client_id, or azp as tokens issued before it had. */
  clientClaim?: 'client_id' | 'azp';
}

/**
 * An access token for `who` with every claim the harness's server issues (its issuer and
 * audience included), signed as told: a test changes one thing and sees that alone refused.
 */
export function signToken(who: TestAccount, { kid, key, scope, jti = 'test', issuedAt, expiresAt = '1h', clientClaim = 'client_id' }: TokenOptions): Promise<string> {
  const token = new SignJWT({ [clientClaim]: who.clientId, account_id: who.account.account_id, scope, ver: 1 })
    .setProtectedHeader({ alg: 'ES256', kid, typ: 'at+jwt' })
    .setIssuer('http://tollwatch.test')
    .setAudience('http://tollwatch.test/api')
    .setSubject(who.clientId)
    .setJti(jti)
    .setExpirationTime(expiresAt);
  return (issuedAt === undefined ? token.setIssuedAt() : token.setIssuedAt(issuedAt)).sign(key);
}

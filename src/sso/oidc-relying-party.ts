import * as client from 'openid-client';
import { OidcRefusal, type IdentityProvider, type OidcAttempt, type OidcIdentity } from '../domain/accounts/oidc-sign-in.ts';
import type { OidcSettings } from './oidc-settings.ts';

/** How long one request to the provider (discovery, token, keys) may take before it counts as down. */
export const PROVIDER_TIMEOUT_SECONDS = 5;

/** The scopes asked for: who the person is, and their address. */
const SCOPE = 'openid email profile';

/**
 * The relying party (openid-client): the authorization code flow with PKCE (S256), `state` and
 * `nonce` per attempt, the ID token verified by the library (signature against the issuer's
 * keys, `iss`, `aud`, `exp`, `nonce`). The provider is discovered at the first sign-in, not at
 * start, and again at the next one after a failure: the server starts, and password sign-in
 * works, while the provider is away.
 */
export class OidcRelyingParty implements IdentityProvider {
  readonly displayName: string;
  private readonly settings: OidcSettings;
  private readonly timeoutSeconds: number;
  private configuration: client.Configuration | undefined;
  private discovering: Promise<client.Configuration> | undefined;

  constructor(settings: OidcSettings, timeoutSeconds = PROVIDER_TIMEOUT_SECONDS) {
    this.settings = settings;
    this.displayName = settings.displayName;
    this.timeoutSeconds = timeoutSeconds;
  }

  async begin(): Promise<OidcAttempt & { url: string }> {
    const configuration = await this.discovered();
    const attempt = { state: client.randomState(), nonce: client.randomNonce(), codeVerifier: client.randomPKCECodeVerifier() };
    const url = client.buildAuthorizationUrl(configuration, {
      redirect_uri: this.settings.redirectUri,
      scope: SCOPE,
      state: attempt.state,
      nonce: attempt.nonce,
      code_challenge: await client.calculatePKCECodeChallenge(attempt.codeVerifier),
      code_challenge_method: 'S256',
    });
    return { ...attempt, url: url.href };
  }

  async finish(callbackUrl: URL, attempt: OidcAttempt): Promise<OidcIdentity> {
    const configuration = await this.discovered();
    let claims: client.IDToken | undefined;
    try {
      const tokens = await client.authorizationCodeGrant(configuration, callbackUrl, {
        pkceCodeVerifier: attempt.codeVerifier,
        expectedState: attempt.state,
        expectedNonce: attempt.nonce,
        idTokenExpected: true,
      });
      claims = tokens.claims();
    } catch (err) {
      throw refusalOf(err);
    }
    if (!claims) throw new OidcRefusal('token_invalid', 'Your provider sent no ID token.');
    return {
      issuer: claims.iss,
      subject: claims.sub,
      email: typeof claims.email === 'string' ? claims.email : undefined,
      // Entra ID sends no `email_verified`; its optional `xms_edov` claim (the address's domain is
      // verified by the tenant's owner) is taken as the same promise.
      emailVerified: claims.email_verified === true || claims.xms_edov === true,
      name: typeof claims.name === 'string' ? claims.name : undefined,
    };
  }

  /** The provider's configuration, discovered once; a failure is not kept, so the next sign-in tries again. */
  private async discovered(): Promise<client.Configuration> {
    if (this.configuration) return this.configuration;
    this.discovering ??= client
      .discovery(new URL(this.settings.issuer), this.settings.clientId, this.settings.clientSecret, undefined, {
        timeout: this.timeoutSeconds,
        execute: this.settings.allowHttp ? [client.allowInsecureRequests] : [],
      })
      .then((configuration) => {
        configuration.timeout = this.timeoutSeconds;
        this.configuration = configuration;
        return configuration;
      })
      .finally(() => {
        this.discovering = undefined;
      });
    try {
      return await this.discovering;
    } catch (err) {
      throw refusalOf(err);
    }
  }
}

/** Codes of openid-client's errors that mean the provider is away or answered nothing usable. */
const UNREACHABLE = new Set(['OAUTH_TIMEOUT', 'OAUTH_ABORT', 'OAUTH_RESPONSE_IS_NOT_CONFORM', 'OAUTH_RESPONSE_IS_NOT_JSON']);

/** What a failure of the flow means for the person at the browser. */
function refusalOf(err: unknown): OidcRefusal {
  if (err instanceof client.AuthorizationResponseError) {
    return new OidcRefusal('provider_error', `Your provider did not sign you in (${err.error}${err.error_description ? `: ${err.error_description}` : ''}).`, undefined, err);
  }
  if (err instanceof client.ResponseBodyError) {
    if (err.status >= 500) return providerDown(err);
    return new OidcRefusal('code_refused', 'Your provider refused this sign-in’s code: it was used already or has expired. Start again from the sign-in page.', undefined, err);
  }
  // fetch's own failure (refused, reset, no such host).
  if (err instanceof TypeError) return providerDown(err);
  if (err instanceof client.ClientError && err.code !== undefined && UNREACHABLE.has(err.code)) return providerDown(err);
  return new OidcRefusal('token_invalid', 'Your provider’s answer failed verification, so it cannot sign you in.', undefined, err);
}

function providerDown(cause: unknown): OidcRefusal {
  return new OidcRefusal('provider_down', 'Your sign-in provider cannot be reached just now. Try again in a few minutes, or sign in with your password.', undefined, cause);
}

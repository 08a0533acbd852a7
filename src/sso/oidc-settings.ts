/** The operator's OpenID provider (docs/operations.md, "Single sign-on"); single sign-on is off without one. */
export interface OidcSettings {
  /** The issuer, or its discovery document's URL (`…/.well-known/openid-configuration`). */
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** The provider's name on the sign-in button: "Sign in with <name>". */
  displayName: string;
  /** Lower-cased domains whose addresses may sign in; anyone's when empty. */
  emailDomains: string[];
  /** Where the provider sends the browser back: `<public URL>/sign-in/oidc/callback`. */
  redirectUri: string;
  /** Plain-http requests to the provider: only for one on this machine's loopback (tests, a local provider). */
  allowHttp: boolean;
}

/** The settings as the environment names them. */
export interface RawOidcSettings {
  TOLLWATCH_OIDC_ISSUER?: string;
  TOLLWATCH_OIDC_CLIENT_ID?: string;
  TOLLWATCH_OIDC_CLIENT_SECRET?: string;
  TOLLWATCH_OIDC_NAME?: string;
  TOLLWATCH_OIDC_EMAIL_DOMAINS?: string;
}

const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost']);
const DOMAIN = /^(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9-]{2,63}$/;

/**
 * The provider's settings, checked at start: all three of issuer, client id and secret, or none
 * (off); an https issuer (http only on loopback); a list of domain names. Refused with a
 * sentence naming the variable, never repeating the secret.
 */
export function settleOidcSettings(raw: RawOidcSettings, publicUrl: string): OidcSettings | undefined {
  const issuer = raw.TOLLWATCH_OIDC_ISSUER?.trim() ?? '';
  const clientId = raw.TOLLWATCH_OIDC_CLIENT_ID?.trim() ?? '';
  const clientSecret = raw.TOLLWATCH_OIDC_CLIENT_SECRET ?? '';
  const given = [issuer, clientId, clientSecret].filter((value) => value !== '').length;
  if (given === 0) {
    if (raw.TOLLWATCH_OIDC_NAME || raw.TOLLWATCH_OIDC_EMAIL_DOMAINS) throw new Error('TOLLWATCH_OIDC_NAME and TOLLWATCH_OIDC_EMAIL_DOMAINS need TOLLWATCH_OIDC_ISSUER, TOLLWATCH_OIDC_CLIENT_ID and TOLLWATCH_OIDC_CLIENT_SECRET');
    return undefined;
  }
  if (given < 3) throw new Error('single sign-on needs all of TOLLWATCH_OIDC_ISSUER, TOLLWATCH_OIDC_CLIENT_ID and TOLLWATCH_OIDC_CLIENT_SECRET');
  let url: URL;
  try {
    url = new URL(issuer);
  } catch {
    throw new Error(`TOLLWATCH_OIDC_ISSUER=${issuer} is not a URL`);
  }
  const loopback = LOOPBACK_HOSTS.has(url.hostname);
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopback)) {
    throw new Error(`TOLLWATCH_OIDC_ISSUER=${issuer} must be an https URL (plain http only on loopback)`);
  }
  if (url.search !== '' || url.hash !== '') throw new Error(`TOLLWATCH_OIDC_ISSUER=${issuer} must have no query or fragment`);
  const emailDomains = (raw.TOLLWATCH_OIDC_EMAIL_DOMAINS ?? '')
    .split(',')
    .map((domain) => domain.trim().toLowerCase().replace(/^@/, ''))
    .filter((domain) => domain !== '');
  for (const domain of emailDomains) {
    if (!DOMAIN.test(domain)) throw new Error(`TOLLWATCH_OIDC_EMAIL_DOMAINS: "${domain}" is not a domain name`);
  }
  const displayName = raw.TOLLWATCH_OIDC_NAME?.trim() || 'single sign-on';
  if (displayName.length > 60) throw new Error('TOLLWATCH_OIDC_NAME must be at most 60 characters');
  return { issuer, clientId, clientSecret, displayName, emailDomains, redirectUri: `${publicUrl}/sign-in/oidc/callback`, allowHttp: url.protocol === 'http:' };
}

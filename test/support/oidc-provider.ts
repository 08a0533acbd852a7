import { createServer, type Server, type ServerResponse } from 'node:http';
import Provider from 'oidc-provider';
import { freePort } from './server-process.ts';

/** A person the test provider knows: who signs in by typing `sub` as their login. */
export interface ProviderAccount {
  sub: string;
  email: string;
  emailVerified: boolean;
  name?: string;
}

/** A real OpenID provider (panva's oidc-provider) on loopback, for the relying party's tests. */
export interface TestOidcProvider {
  /** `http://127.0.0.1:<port>`: the issuer, and where discovery starts. */
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** The people it knows, by `sub`; change one to see what a later sign-in does. */
  accounts: Map<string, ProviderAccount>;
  /** The environment pointing a Tollwatch at this provider. */
  env(extra?: Record<string, string>): Record<string, string>;
  /**
   * What a browser does at the provider without one: follows the authorization URL, signs in
   * as `sub` through the development login form, and answers the callback URL the provider
   * sends it back to (with `code`, `state` and `iss`). `abort` declines instead (`access_denied`).
   */
  signIn(authorizationUrl: string, sub: string, options?: { abort?: boolean }): Promise<string>;
  /**
   * While on, the provider keeps the browser instead of sending it back: its redirect to a
   * callback becomes a page saying "held", and the callback URL is kept for `heldReturn()`, so
   * a test can change it, load it twice, or stop the provider before loading it.
   */
  holdReturns(on: boolean): void;
  /** The callback URL held back since holding began. */
  heldReturn(): string | undefined;
  /** Stops answering (connections refused) and starts again on the same port. */
  stop(): Promise<void>;
  start(): Promise<void>;
}

export const TEST_CLIENT_ID = 'tollwatch-dashboard';
export const TEST_CLIENT_SECRET = 'a-test-secret-of-the-dashboard-client-0123456789';

/**
 * Starts a provider with one confidential client allowed back to each of `redirectUris`, the
 * in-memory adapter, PKCE required, and its development login form (any password; the login
 * is the account's `sub`). Consent is given beforehand, as a first-party client's would be, so
 * signing in is one form. ID tokens carry `email`, `email_verified` and `name` themselves
 * (`conformIdTokenClaims: false`), as Keycloak's, Google's and Auth0's do.
 */
export async function startOidcProvider(redirectUris: string[], people: ProviderAccount[]): Promise<TestOidcProvider> {
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  const accounts = new Map(people.map((person) => [person.sub, person]));
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: TEST_CLIENT_ID,
        client_secret: TEST_CLIENT_SECRET,
        redirect_uris: redirectUris,
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_post',
      },
    ],
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
    scopes: ['openid', 'email', 'profile'],
    conformIdTokenClaims: false,
    cookies: { keys: ['a-test-cookie-key-0123456789abcdef'] },
    features: { devInteractions: { enabled: true } },
    pkce: { required: () => true },
    ttl: { AccessToken: 600, AuthorizationCode: 60, Grant: 600, IdToken: 600, Interaction: 600, Session: 600 },
    async findAccount(_ctx, id) {
      const person = accounts.get(id);
      if (!person) return undefined;
      return {
        accountId: id,
        async claims() {
          return { sub: person.sub, email: person.email, email_verified: person.emailVerified, ...(person.name ? { name: person.name } : {}) };
        },
      };
    },
    async loadExistingGrant(ctx) {
      const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client!.clientId, accountId: ctx.oidc.session!.accountId! });
      grant.addOIDCScope('openid email profile');
      await grant.save();
      return grant;
    },
  });
  let server: Server | undefined;
  let holding = false;
  let held: string | undefined;
  const handler = provider.callback();
  const listen = () =>
    new Promise<void>((resolve, reject) => {
      server = createServer((req, res) => {
        if (holding) holdReturn(res, redirectUris, (url) => (held = url));
        return handler(req, res);
      });
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
  await listen();

  return {
    issuer,
    clientId: TEST_CLIENT_ID,
    clientSecret: TEST_CLIENT_SECRET,
    accounts,
    env: (extra = {}) => ({ TOLLWATCH_OIDC_ISSUER: issuer, TOLLWATCH_OIDC_CLIENT_ID: TEST_CLIENT_ID, TOLLWATCH_OIDC_CLIENT_SECRET: TEST_CLIENT_SECRET, TOLLWATCH_OIDC_NAME: 'Acme SSO', ...extra }),
    signIn: (authorizationUrl, sub, options = {}) => browseProvider(issuer, authorizationUrl, sub, options.abort ?? false),
    holdReturns(on) {
      holding = on;
      if (on) held = undefined;
    },
    heldReturn: () => held,
    async stop() {
      const closing = server;
      server = undefined;
      if (!closing) return;
      await new Promise<void>((resolve) => {
        closing.close(() => resolve());
        closing.closeAllConnections();
      });
    },
    async start() {
      if (!server) await listen();
    },
  };
}

/** Turns this answer, if it sends the browser back to a callback, into a page that keeps it here. */
function holdReturn(res: ServerResponse, redirectUris: string[], keep: (url: string) => void) {
  const end = res.end.bind(res);
  res.end = ((...args: Parameters<ServerResponse['end']>) => {
    const location = res.getHeader('location');
    if (typeof location === 'string' && redirectUris.some((uri) => location.startsWith(`${uri}?`))) {
      keep(location);
      const page = '<!doctype html><html lang="en"><title>Held</title><h1>Held by the test provider</h1></html>';
      res.statusCode = 200;
      res.removeHeader('location');
      res.setHeader('content-type', 'text/html; charset=utf-8');
      res.setHeader('content-length', Buffer.byteLength(page));
      return end(page);
    }
    return end(...args);
  }) as ServerResponse['end'];
}

/** The provider's pages as a browser goes through them: its cookies kept, its redirects followed until one leaves the provider. */
async function browseProvider(issuer: string, authorizationUrl: string, sub: string, abort: boolean): Promise<string> {
  const cookies = new Map<string, string>();
  let url = authorizationUrl;
  let body: URLSearchParams | undefined;
  for (let step = 0; step < 10; step++) {
    const res = await fetch(url, {
      method: body ? 'POST' : 'GET',
      headers: { cookie: [...cookies].map(([name, value]) => `${name}=${value}`).join('; '), ...(body ? { 'content-type': 'application/x-www-form-urlencoded' } : {}) },
      body,
      redirect: 'manual',
    });
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = pair!.indexOf('=');
      cookies.set(pair!.slice(0, eq), pair!.slice(eq + 1));
    }
    await res.text();
    body = undefined;
    const location = res.headers.get('location');
    if (location) {
      const next = new URL(location, url);
      if (next.origin !== new URL(issuer).origin) return next.href;
      url = next.href;
      continue;
    }
    // A page of the provider's: its login form (the only interaction left, consent being given).
    const interaction = /\/interaction\/([^/?]+)$/.exec(new URL(url).pathname);
    if (res.status !== 200 || !interaction) throw new Error(`the provider answered ${res.status} at ${url}`);
    if (abort) {
      url = `${issuer}/interaction/${interaction[1]}/abort`;
    } else {
      body = new URLSearchParams({ prompt: 'login', login: sub, password: 'any' });
    }
  }
  throw new Error('the provider never sent the browser back');
}

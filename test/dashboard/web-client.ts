import type { Harness } from '../support/harness.ts';

/** A page as the test browser got it. */
export interface Page {
  status: number;
  headers: Headers;
  text: string;
  location: string | null;
}

/**
 * A minimal browser for dashboard tests: keeps cookies, follows no redirects by itself (tests
 * look at them), reads the CSRF token of the last page it fetched and posts forms with it.
 */
export class WebClient {
  readonly base: string;
  readonly cookies = new Map<string, string>();
  /** The Set-Cookie lines of the last answer, for tests of their flags. */
  lastSetCookies: string[] = [];
  private csrf = '';
  /** Sent with every request: `x-forwarded-for` makes a browser behind a trusted proxy. */
  private readonly extraHeaders: Record<string, string>;

  constructor(base: string, headers: Record<string, string> = {}) {
    this.base = base;
    this.extraHeaders = headers;
  }

  async get(path: string): Promise<Page> {
    return this.request(path, { method: 'GET' });
  }

  /** Posts a form with the CSRF token of the last page unless `csrf` says otherwise. */
  async post(path: string, fields: Record<string, string | string[]> = {}, csrf: string | null = this.csrf): Promise<Page> {
    const body = new URLSearchParams();
    for (const [name, value] of Object.entries(fields)) for (const v of [value].flat()) body.append(name, v);
    if (csrf !== null) body.set('_csrf', csrf);
    return this.request(path, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: body.toString() });
  }

  /**
   * Posts a form that answers with a redirect (post/redirect/get) and opens the page it leads
   * to, as a browser would; fails on any other answer.
   */
  async submit(path: string, fields: Record<string, string | string[]> = {}): Promise<Page> {
    const posted = await this.post(path, fields);
    if (posted.status !== 303 || !posted.location) throw new Error(`POST ${path} answered ${posted.status}, not a redirect: ${posted.text.slice(0, 300)}`);
    return this.get(posted.location);
  }

  get csrfToken(): string {
    return this.csrf;
  }

  /** Signs in through the form; the answer is the redirect (303) or the refusal. */
  async signIn(email: string, password: string): Promise<Page> {
    await this.get('/sign-in');
    return this.post('/sign-in', { email, password });
  }

  private async request(path: string, init: RequestInit): Promise<Page> {
    // What a browser asks for: pages.
    const headers = new Headers({ accept: 'text/html,application/xhtml+xml,*/*;q=0.8', ...Object.fromEntries(new Headers(init.headers)) });
    for (const [name, value] of Object.entries(this.extraHeaders)) headers.set(name, value);
    if (this.cookies.size > 0) headers.set('cookie', [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; '));
    const res = await fetch(`${this.base}${path}`, { ...init, headers, redirect: 'manual' });
    this.lastSetCookies = res.headers.getSetCookie();
    for (const line of this.lastSetCookies) {
      const [pair] = line.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq).trim();
      const value = pair!.slice(eq + 1).trim();
      if (value === '' || /max-age=0|expires=thu, 01 jan 1970/i.test(line)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    const text = await res.text();
    const token = /name="_csrf" value="([^"]+)"/.exec(text);
    if (token) this.csrf = token[1]!;
    return { status: res.status, headers: res.headers, text, location: res.headers.get('location') };
  }
}

let counter = 0;

/** A user of an account (or an operator when `accountId` is null) with a password set through the service. */
export async function makeUser(h: Harness, accountId: string | null, role: 'owner' | 'member' | 'operator' = 'owner') {
  counter += 1;
  const email = `user${counter}-${Math.random().toString(36).slice(2, 8)}@example.test`;
  const password = `correct horse battery ${counter}`;
  const issued = await h.services.users.invite({ accountId, email, role });
  await h.services.users.acceptInvitation(issued.link.split('/').pop()!, password);
  return { user: issued.user, email, password };
}

/** A browser signed in as a new user of the account. */
export async function signedIn(h: Harness, accountId: string | null, role: 'owner' | 'member' | 'operator' = 'owner') {
  const made = await makeUser(h, accountId, role);
  const browser = new WebClient(h.url);
  const res = await browser.signIn(made.email, made.password);
  if (res.status !== 303) throw new Error(`sign-in failed: ${res.status}`);
  return { ...made, browser };
}

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { OidcRefusal, type OidcRefusalReason, ATTEMPT_TTL_MS } from '../../domain/accounts/oidc-sign-in.ts';
import type { Services } from '../../services.ts';
import { html, type Html } from '../html.ts';
import { sendPage } from '../layout.ts';
import { sameSitePath } from '../same-site-path.ts';
import { completeSignIn } from '../sign-in-completion.ts';
import { durationText } from '../time-text.ts';
import { WebRefusal } from '../web-refusal.ts';
import { cookieOptions } from '../web-session.ts';

/** What these routes use of the services. */
type RouteServices = Pick<Services, 'audit' | 'config' | 'oidcSignIn' | 'sessions' | 'users' | 'twoFactor' | 'pendingSignIns' | 'oidcAttemptRequests'>;

/**
 * The cookie binding an attempt to the browser that began it: its `state`, sent back only to
 * the callback. Without it, a callback URL someone else began (their own sign-in, planted in a
 * link) would sign this browser in as them. SameSite=Lax still sends it on the provider's
 * top-level redirect back.
 */
const ATTEMPT_COOKIE = 'tw_oidc';
const ATTEMPT_COOKIE_PATH = '/sign-in/oidc';

/** The status of each refusal: the browser's (or the person's) faults 4xx, the provider's 502. */
const STATUS: Record<OidcRefusalReason, number> = {
  attempt_unknown: 400,
  attempt_expired: 400,
  state_mismatch: 400,
  code_refused: 400,
  provider_error: 403,
  email_missing: 403,
  email_unverified: 403,
  domain_not_allowed: 403,
  no_account: 403,
  user_disabled: 403,
  provider_down: 502,
  token_invalid: 502,
};

/**
 * Single sign-on through the operator's OpenID provider (docs/dashboard.md, "Signing in"):
 * `/sign-in/oidc` sends the browser to the provider, which sends it back to the callback.
 * Started by a link, not a form: the dashboard's `form-action 'self'` would stop a form's
 * redirect to the provider. Every refusal is a page and a `user.sign_in_failed` row with its reason.
 */
export async function oidcSignInRoutes(app: FastifyInstance, { services }: { services: RouteServices }) {
  const { oidcSignIn } = services;
  if (!oidcSignIn) return;

  app.get('/sign-in/oidc', { config: { web: 'public' } }, async (request, reply) => {
    const next = sameSitePath((request.query as Record<string, string | undefined>).next ?? '/');
    // Each attempt stores a row for its 10 minutes, on anyone's asking: bounded per address and network.
    const allowance = await services.oidcAttemptRequests.attempt(request.ip);
    if (!allowance.allowed) throw new WebRefusal(429, `Too many sign-ins started from your address. Try again in ${durationText(allowance.retryAfterSeconds)}.`, allowance.retryAfterSeconds);
    let begun;
    try {
      begun = await oidcSignIn.begin(next);
    } catch (err) {
      if (err instanceof OidcRefusal) return refused(services, request, reply, err);
      throw err;
    }
    reply.setCookie(ATTEMPT_COOKIE, begun.state, { ...cookieOptions(services, ATTEMPT_TTL_MS / 1000), path: ATTEMPT_COOKIE_PATH });
    return reply.redirect(begun.url, 303);
  });

  app.get('/sign-in/oidc/callback', { config: { web: 'public' } }, async (request, reply) => {
    // The URL the provider was told to come back to, with what it added: never the Host header's.
    const callbackUrl = new URL(services.config.oidc!.redirectUri);
    callbackUrl.search = request.url.includes('?') ? request.url.slice(request.url.indexOf('?')) : '';
    const browserState = request.cookies[ATTEMPT_COOKIE];
    reply.clearCookie(ATTEMPT_COOKIE, { path: ATTEMPT_COOKIE_PATH });
    let signedIn;
    try {
      signedIn = await oidcSignIn.complete(callbackUrl, browserState);
    } catch (err) {
      if (err instanceof OidcRefusal) return refused(services, request, reply, err);
      throw err;
    }
    return completeSignIn(services, request, reply, signedIn.user, signedIn.nextPath, 'oidc');
  });
}

/** The sign-in page's way to the provider. */
export function oidcButton(provider: string, next: string): Html {
  const href = `/sign-in/oidc${next === '/' ? '' : `?${new URLSearchParams({ next }).toString()}`}`;
  return html`<p class="sso"><a class="button" href="${href}">Sign in with ${provider}</a></p>`;
}

async function refused(services: RouteServices, request: FastifyRequest, reply: FastifyReply, refusal: OidcRefusal) {
  const detail = { method: 'oidc', reason: refusal.reason, ...(refusal.email ? { email: refusal.email.slice(0, 320) } : {}) };
  services.audit
    .record({ actor: 'anonymous', ip: request.ip, clientId: null, accountId: null, action: 'user.sign_in_failed', detail })
    .catch((err: unknown) => request.log.warn({ err }, 'audit write failed'));
  const status = STATUS[refusal.reason];
  if (status === 502) {
    // The operator's to look into: a provider away, or one whose answers do not verify (a wrong issuer, keys).
    request.log.warn({ err: refusal.cause, reason: refusal.reason }, 'single sign-on: the provider failed');
    reply.header('retry-after', 60);
  }
  return sendPage(request, reply, 'Single sign-on failed', html`<p role="alert" class="error">${refusal.message}</p><p><a href="/sign-in">Back to sign-in</a></p>`, status);
}

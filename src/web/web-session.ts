import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Account } from '../domain/accounts/accounts.ts';
import type { User } from '../domain/accounts/users.ts';
import type { Services } from '../services.ts';
import { csrfTokenFor, csrfTokenMatches, newFormSecret } from './csrf.ts';
import { ENROLMENT_PATH } from './two-factor-paths.ts';
import { WebRefusal } from './web-refusal.ts';
import type { WebAccess } from './web-request.ts';

/** The session cookie: HttpOnly, SameSite=Lax, Secure when the public URL is https. */
export const SESSION_COOKIE = 'tw_session';
/** The form cookie: the CSRF secret of a browser not signed in (sign-in, invitations, sign-up). */
export const FORM_COOKIE = 'tw_form';

/** How the dashboard's cookies are written: never readable by scripts, never sent on cross-site subrequests. */
export function cookieOptions(services: Pick<Services, 'config'>, maxAgeSeconds: number) {
  return { path: '/', httpOnly: true, sameSite: 'lax' as const, secure: services.config.dashboard.secureCookies, maxAge: maxAgeSeconds };
}

/**
 * The dashboard's preHandler (after the form body is read): who is signed in, the CSRF check
 * of every state-changing request, then the route's access rule. A stranger opening a page is
 * sent to sign in; anyone else without the right gets 403.
 */
export function webGate(services: Services) {
  return async function gate(request: FastifyRequest, reply: FastifyReply) {
    const access = request.routeOptions.config.web ?? 'operator';
    // A stylesheet or script needs no session: no store read for each file a page loads.
    if (access === 'asset') {
      request.web = { user: undefined, account: undefined, secret: '' };
      return;
    }
    const sessionId = request.cookies[SESSION_COOKIE];
    const user = sessionId ? await services.sessions.resume(sessionId) : undefined;
    if (sessionId && !user) reply.clearCookie(SESSION_COOKIE, { path: '/' });
    let account: Account | undefined;
    if (user?.account_id) account = await services.accounts.getAccount(user.account_id);
    // A disabled account's users are signed out as its clients are refused, and for good: the
    // session ends here, so enabling the account again does not revive it.
    const signedIn = user && !account?.disabled ? user : undefined;
    if (user && !signedIn && sessionId) {
      await services.sessions.end(sessionId);
      reply.clearCookie(SESSION_COOKIE, { path: '/' });
    }
    let secret = signedIn && sessionId ? sessionId : request.cookies[FORM_COOKIE];
    if (!secret) {
      secret = newFormSecret();
      reply.setCookie(FORM_COOKIE, secret, cookieOptions(services, 86_400));
    }
    request.web = { user: signedIn, account: signedIn ? account : undefined, secret };

    if (request.method !== 'GET' && request.method !== 'HEAD') {
      const posted = (request.body as Record<string, unknown> | undefined)?._csrf;
      if (!csrfTokenMatches(secret, posted)) throw new WebRefusal(403, 'This form has expired or did not come from this site. Reload the page and try again.');
    }
    if (access === 'public') return;
    if (!signedIn) {
      if (request.method === 'GET') return reply.redirect(`/sign-in?next=${encodeURIComponent(request.url)}`, 303);
      throw new WebRefusal(401, 'Sign in first.');
    }
    // An account that requires two-factor sign-in keeps its users without it on the enrolment pages.
    if (!request.routeOptions.config.twoFactorSetup && (await services.twoFactor.enrolmentDue(signedIn))) {
      if (request.method === 'GET') return reply.redirect(ENROLMENT_PATH, 303);
      throw new WebRefusal(403, 'Your account requires two-factor sign-in: set it up first.');
    }
    if (!allowed(access, signedIn)) throw new WebRefusal(403, 'Your role does not allow this.');
  };
}

function allowed(access: Exclude<WebAccess, 'public' | 'asset'>, user: User): boolean {
  switch (access) {
    case 'signed-in':
      return true;
    case 'account':
      return user.role === 'owner' || user.role === 'member';
    case 'owner':
      return user.role === 'owner';
    case 'operator':
      return user.role === 'operator';
  }
}

/** The CSRF token every form of this page carries. */
export function csrfOf(request: FastifyRequest): string {
  return csrfTokenFor(request.web.secret);
}

/** The signed-in user's account, for routes whose access rule guarantees one. */
export function accountOf(request: FastifyRequest): Account {
  const account = request.web.account;
  if (!account) throw new WebRefusal(403, 'Only an account’s users can open this page.');
  return account;
}

/** The signed-in user, for routes whose access rule guarantees one. */
export function userOf(request: FastifyRequest): User {
  const user = request.web.user;
  if (!user) throw new WebRefusal(401, 'Sign in first.');
  return user;
}

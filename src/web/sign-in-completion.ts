import type { FastifyReply, FastifyRequest } from 'fastify';
import { PENDING_SIGN_IN_SECONDS } from '../domain/accounts/pending-sign-ins.ts';
import type { User } from '../domain/accounts/users.ts';
import type { Services } from '../services.ts';
import { sameSitePath } from './same-site-path.ts';
import { ENROLMENT_PATH, SECOND_STEP_PATH } from './two-factor-paths.ts';
import { cookieOptions, SESSION_COOKIE } from './web-session.ts';

/** How the person proved who they are first: the `method` of the `user.signed_in` audit row. */
export type SignInMethod = 'password' | 'oidc';

/** The cookie of a sign-in awaiting its second step: HttpOnly, SameSite=Strict, sent only to /sign-in paths. */
export const PENDING_COOKIE = 'tw_pending';

/** What completing a sign-in uses of the services. */
export type CompletionServices = Pick<Services, 'config' | 'sessions' | 'users' | 'twoFactor' | 'pendingSignIns'>;

/**
 * The one decision once a user has proved who they are by a first factor (the password form or
 * the OpenID provider): a user with two-factor sign-in gets the second step, bound
 * to this browser by a short-lived cookie, and no session yet; anyone else gets a session now.
 */
export async function completeSignIn(services: CompletionServices, request: FastifyRequest, reply: FastifyReply, user: User, next: string, method: SignInMethod): Promise<FastifyReply> {
  if (await services.twoFactor.enrolled(user.user_id)) {
    const token = await services.pendingSignIns.start(user.user_id, sameSitePath(next), method);
    reply.setCookie(PENDING_COOKIE, token, pendingCookieOptions(services));
    return reply.redirect(SECOND_STEP_PATH, 303);
  }
  return startSession(services, request, reply, user, next, method);
}

/**
 * A session for a user whose sign-in is complete, and the way on: the page asked for, or the
 * enrolment page where the account requires two-factor sign-in and the user has none, or where
 * `shown` (what the sign-in did, such as a recovery code spent) is shown once.
 */
export async function startSession(services: CompletionServices, request: FastifyRequest, reply: FastifyReply, user: User, next: string, method: string, shown?: Record<string, unknown>): Promise<FastifyReply> {
  // A new id at every sign-in: an id planted in this browser before (session fixation) never becomes a signed-in one.
  const previous = request.cookies[SESSION_COOKIE];
  if (previous) await services.sessions.end(previous);
  const sessionId = await services.sessions.start(user.user_id);
  await services.users.recordOwnAction('user.signed_in', user, request.ip, { method });
  reply.setCookie(SESSION_COOKIE, sessionId, cookieOptions(services, services.config.dashboard.sessionMaxSeconds));
  if (shown) {
    await services.sessions.hold(sessionId, shown);
    return reply.redirect(ENROLMENT_PATH, 303);
  }
  return reply.redirect((await services.twoFactor.enrolmentDue(user)) ? ENROLMENT_PATH : sameSitePath(next), 303);
}

/** The pending sign-in's cookie: as the session's, but Strict and only for the sign-in pages. */
export function pendingCookieOptions(services: Pick<Services, 'config'>) {
  return { ...cookieOptions(services, PENDING_SIGN_IN_SECONDS), sameSite: 'strict' as const, path: '/sign-in' };
}

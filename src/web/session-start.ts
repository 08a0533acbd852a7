import type { FastifyReply, FastifyRequest } from 'fastify';
import type { User } from '../domain/accounts/users.ts';
import type { Services } from '../services.ts';
import { cookieOptions, SESSION_COOKIE } from './web-session.ts';

/** How the person proved who they are: the `method` of the `user.signed_in` audit row. */
export type SignInMethod = 'password' | 'oidc';

/**
 * Signs a user in once they have proved who they are, whichever way: the one place a session
 * is made, so a step every sign-in must pass (a second factor) goes here.
 */
export async function startSession(services: Pick<Services, 'config' | 'sessions' | 'users'>, request: FastifyRequest, reply: FastifyReply, user: User, method: SignInMethod): Promise<void> {
  // A new id at every sign-in: an id planted in this browser before (session fixation) never becomes a signed-in one.
  const previous = request.cookies[SESSION_COOKIE];
  if (previous) await services.sessions.end(previous);
  const sessionId = await services.sessions.start(user.user_id);
  await services.users.recordOwnAction('user.signed_in', user, request.ip, { method });
  reply.setCookie(SESSION_COOKIE, sessionId, cookieOptions(services, services.config.dashboard.sessionMaxSeconds));
}

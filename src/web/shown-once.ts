import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Services } from '../services.ts';
import { html, type Html } from './html.ts';
import { SESSION_COOKIE } from './web-session.ts';

/**
 * Post/redirect/get for a form whose result must be shown once (a new client secret, a
 * webhook's secret, a notice): the POST keeps `view` with the session and answers 303 to the
 * page that shows it, which takes it (domain/accounts/sessions.ts `hold`). Reloading that page, or
 * going back and forward, repeats no action and shows the secret no more; it is never in a URL.
 */
export async function redirectShowingOnce(services: Pick<Services, 'sessions'>, request: FastifyRequest, reply: FastifyReply, to: string, view: Record<string, unknown>): Promise<FastifyReply> {
  const sessionId = request.cookies[SESSION_COOKIE];
  if (sessionId) await services.sessions.hold(sessionId, view);
  return reply.redirect(to, 303);
}

/** The view a form held for this page, once; undefined when there is none (a reload). */
export async function heldView(services: Pick<Services, 'sessions'>, request: FastifyRequest): Promise<Record<string, unknown> | undefined> {
  const sessionId = request.cookies[SESSION_COOKIE];
  return sessionId ? services.sessions.takeHeld(sessionId) : undefined;
}

/**
 * What a form's redirect shows, announced and focused: the page opens with focus on it, so the
 * next Tab reaches what follows it (a new secret's Copy button) rather than the top of the page.
 */
export function shownNotice(content: Html): Html {
  return html`<p class="notice" role="status" tabindex="-1" autofocus>${content}</p>`;
}

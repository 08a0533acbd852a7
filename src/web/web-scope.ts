import { readFileSync } from 'node:fs';
import cookie from '@fastify/cookie';
import formbody from '@fastify/formbody';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ServiceError } from '../domain/errors.ts';
import { faultClass, UNAVAILABLE_RETRY_SECONDS } from '../http/fault-class.ts';
import { PROBLEMS } from '../http/problem.ts';
import { securityHeaders } from '../http/security-headers.ts';
import type { Services } from '../services.ts';
import { sendMessage } from './layout.ts';
import { accountRoutes } from './routes/account.ts';
import { accountLeaveRoutes } from './routes/account-leave.ts';
import { clientRoutes } from './routes/clients.ts';
import { allowlistPages } from './routes/allowlist.ts';
import { eventRoutes } from './routes/events.ts';
import { integrationPages } from './routes/integrations.ts';
import { lookupRoute } from './routes/lookup.ts';
import { subjectPages } from './routes/subjects.ts';
import { nodeRoutes } from './routes/nodes.ts';
import { operatorRoutes } from './routes/operator.ts';
import { operatorPeersRoutes } from './routes/operator-peers.ts';
import { overviewRoutes } from './routes/overview.ts';
import { signInRoutes } from './routes/sign-in.ts';
import { oidcSignInRoutes } from './routes/oidc-sign-in.ts';
import { twoFactorRoutes } from './routes/two-factor.ts';
import { signUpRoutes } from './routes/sign-up.ts';
import { contributorRoutes } from './routes/contributors.ts';
import { operatorContributorRoutes } from './routes/operator-contributors.ts';
import { WebRefusal } from './web-refusal.ts';
import { SESSION_COOKIE, webGate } from './web-session.ts';

/**
 * The dashboard's policy: scripts, styles and images from this origin only (no inline script
 * or style, so an injected tag could run nothing even if escaping failed), forms posting only
 * here, never framed. Charts are inline SVG, which needs no source of its own.
 */
export const DASHBOARD_CSP = [
  "default-src 'none'",
  "base-uri 'none'",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "img-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
].join('; ');

const STATIC_FILES: Record<string, { type: string; body: Buffer }> = {
  'dashboard.css': { type: 'text/css; charset=utf-8', body: readFileSync(new URL('./static/dashboard.css', import.meta.url)) },
  'dashboard.js': { type: 'text/javascript; charset=utf-8', body: readFileSync(new URL('./static/dashboard.js', import.meta.url)) },
  'favicon.svg': { type: 'image/svg+xml', body: readFileSync(new URL('./static/favicon.svg', import.meta.url)) },
};
/** The icon, also where browsers look for it unasked. */
const FAVICON = STATIC_FILES['favicon.svg']!;

/**
 * The dashboard (docs/dashboard.md): server-rendered pages at `/`, plain forms that post, charts
 * as inline SVG, two static files. Hidden from the OpenAPI document: these are pages, not API.
 * In order, for every request: headers; the form body; the gate (session, CSRF, access);
 * the handler; anything thrown becomes a page with a status.
 */
export async function webScope(app: FastifyInstance, { services }: { services: Services }) {
  app.addHook('onRoute', (route) => {
    route.schema = { ...route.schema, hide: true };
    if (!route.config?.web) throw new Error(`dashboard route ${route.url} names no access rule`);
  });
  await app.register(cookie);
  await app.register(formbody, { bodyLimit: 64 * 1024 });
  const headers = { ...securityHeaders(), 'content-security-policy': DASHBOARD_CSP, 'cache-control': 'no-store' };
  app.addHook('onRequest', async (_request, reply) => {
    reply.headers(headers);
  });
  app.decorateRequest('web', undefined as never);
  app.addHook('preHandler', webGate(services));
  app.setErrorHandler(webErrorPage);

  app.get('/static/:file', { config: { web: 'asset' } }, async (request, reply) => {
    const file = STATIC_FILES[(request.params as { file: string }).file];
    if (!file) throw new WebRefusal(404, 'No such file.');
    return reply.header('cache-control', 'public, max-age=3600').type(file.type).send(file.body);
  });
  app.get('/', { config: { web: 'signed-in' } }, async (request, reply) =>
    reply.redirect(request.web.user?.role === 'operator' ? '/operator/accounts' : '/overview', 303),
  );

  await app.register(signInRoutes, { services });
  await app.register(oidcSignInRoutes, { services });
  await app.register(twoFactorRoutes, { services });
  await app.register(overviewRoutes, { services });
  await app.register(eventRoutes, { services });
  await app.register(nodeRoutes, { services });
  await app.register(lookupRoute, { services });
  await app.register(subjectPages, { services });
  await app.register(clientRoutes, { services });
  await app.register(integrationPages, { services });
  await app.register(allowlistPages, { services });
  await app.register(accountRoutes, { services });
  await app.register(accountLeaveRoutes, { services });
  await app.register(operatorRoutes, { services });
  await app.register(operatorPeersRoutes, { services });
  await app.register(signUpRoutes, { services });
  await app.register(contributorRoutes, { services });
  await app.register(operatorContributorRoutes, { services });
}

/** Every refusal and failure of a dashboard request, as a page; nothing internal reaches it. */
function webErrorPage(error: FastifyError | Error, request: FastifyRequest, reply: FastifyReply) {
  // The gate may not have run (a body Fastify could not read): pages render without a user then.
  request.web ??= { user: undefined, account: undefined, secret: '' };
  if (error instanceof WebRefusal) {
    if (error.retryAfterSeconds !== undefined) reply.header('retry-after', error.retryAfterSeconds);
    return sendMessage(request, reply, error.status, titleOf(error.status), error.message);
  }
  if (error instanceof ServiceError) {
    if (error.retryAfterSeconds !== undefined) reply.header('retry-after', error.retryAfterSeconds);
    return sendMessage(request, reply, PROBLEMS[error.code].status, PROBLEMS[error.code].title, error.message);
  }
  const fault = faultClass(error);
  if (fault.kind === 'client') return sendMessage(request, reply, fault.status, titleOf(fault.status), 'The request could not be read.');
  if (fault.kind === 'unavailable') {
    reply.header('retry-after', UNAVAILABLE_RETRY_SECONDS);
    return sendMessage(request, reply, 503, 'Unavailable', 'The service cannot reach its store just now; try again shortly.');
  }
  request.log.error({ err: error }, 'dashboard failure');
  return sendMessage(request, reply, 500, 'Server error', 'Something failed on our side; it has been logged.');
}

/**
 * Paths nobody serves, outside `/api` and `/ingest` (which answer problem documents): a page in
 * the dashboard's layout for a browser, with its navigation when a session is signed in, and
 * the dashboard's headers; Fastify's JSON for anything else. `/favicon.ico` is the icon.
 */
export function webNotFound(services: Pick<Services, 'sessions' | 'accounts'>) {
  const headers = { ...securityHeaders(), 'content-security-policy': DASHBOARD_CSP, 'cache-control': 'no-store' };
  return async function notFound(request: FastifyRequest, reply: FastifyReply) {
    if (request.method === 'GET' && request.url === '/favicon.ico') return reply.header('cache-control', 'public, max-age=86400').type(FAVICON.type).send(FAVICON.body);
    if (!/text\/html/.test(request.headers.accept ?? '')) return reply.code(404).send({ message: `Route ${request.method}:${request.url} not found`, error: 'Not Found', statusCode: 404 });
    reply.headers(headers);
    const sessionId = (request.headers.cookie ?? '').split(/;\s*/).find((c) => c.startsWith(`${SESSION_COOKIE}=`))?.slice(SESSION_COOKIE.length + 1);
    const user = sessionId ? await services.sessions.resume(decodeURIComponent(sessionId)).catch(() => undefined) : undefined;
    const account = user?.account_id ? await services.accounts.getAccount(user.account_id).catch(() => undefined) : undefined;
    request.web = { user, account, secret: sessionId ?? '' };
    return sendMessage(request, reply, 404, 'Not found', 'There is no page at this address.');
  };
}

function titleOf(status: number): string {
  return ({ 401: 'Sign in', 403: 'Not allowed', 404: 'Not found', 429: 'Too many attempts' } as Record<number, string>)[status] ?? 'Cannot do that';
}

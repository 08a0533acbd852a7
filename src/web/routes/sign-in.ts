import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ServiceError } from '../../domain/errors.ts';
import { MIN_PASSWORD_LENGTH } from '../../domain/passwords.ts';
import type { AuditEntry } from '../../domain/audit.ts';
import { slowDown, type FailureOutcome } from '../../limits/failure-throttle.ts';
import type { Services } from '../../services.ts';
import { html } from '../html.ts';
import { csrfField, sendPage } from '../layout.ts';
import { WebRefusal } from '../web-refusal.ts';
import { cookieOptions, SESSION_COOKIE } from '../web-session.ts';
import { formText } from '../form.ts';

/**
 * Signing in and out, invitation links and self sign-up (docs/dashboard.md, "Sessions"). A
 * failed sign-in is counted by the same throttle as a failed token request (docs/api.md §2):
 * per address and per email, slowed, then refused with 429.
 */
export async function signInRoutes(app: FastifyInstance, { services }: { services: Services }) {
  const { dashboard } = services.config;

  app.get('/sign-in', { config: { web: 'public' } }, async (request, reply) => {
    if (request.web.user) return reply.redirect('/', 303);
    const query = request.query as Record<string, string | undefined>;
    return signInPage(request, reply, 200, query.next, query.done === 'password' ? 'Your password is set. Sign in with it.' : undefined);
  });

  app.post('/sign-in', { config: { web: 'public' } }, async (request, reply) => {
    const email = formText(request, 'email');
    const password = formText(request, 'password');
    const next = formText(request, 'next');
    const user = await services.users.authenticate(email, password);
    if (!user) {
      const outcome = await services.authFailures.failed(request.ip, `email:${email.trim().toLowerCase()}`);
      for (const entry of signInFailureAudit(request.ip, email, outcome)) {
        services.audit.record(entry).catch((err: unknown) => request.log.warn({ err }, 'audit write failed'));
      }
      if (outcome.refused) throw new WebRefusal(429, `Too many failed sign-ins. Try again in ${outcome.retryAfterSeconds} seconds.`, outcome.retryAfterSeconds);
      await slowDown(outcome);
      return signInPage(request, reply, 401, next, undefined, 'Wrong email or password.');
    }
    // A new id at every sign-in: an id planted in this browser before (session fixation) never becomes a signed-in one.
    const previous = request.cookies[SESSION_COOKIE];
    if (previous) await services.sessions.end(previous);
    const sessionId = await services.sessions.start(user.user_id);
    await services.users.recordOwnAction('user.signed_in', user, request.ip);
    reply.setCookie(SESSION_COOKIE, sessionId, cookieOptions(services, dashboard.sessionMaxSeconds));
    return reply.redirect(safeNext(next), 303);
  });

  app.post('/sign-out', { config: { web: 'public' } }, async (request, reply) => {
    const sessionId = request.cookies[SESSION_COOKIE];
    if (sessionId) await services.sessions.end(sessionId);
    reply.clearCookie(SESSION_COOKIE, { path: '/' });
    return reply.redirect('/sign-in', 303);
  });

  app.post('/sign-out-everywhere', { config: { web: 'signed-in' } }, async (request, reply) => {
    const user = request.web.user!;
    await services.sessions.endAll(user.user_id);
    await services.users.recordOwnAction('user.signed_out_everywhere', user, request.ip);
    reply.clearCookie(SESSION_COOKIE, { path: '/' });
    return reply.redirect('/sign-in', 303);
  });

  app.get('/invitations/:token', { config: { web: 'public' } }, async (request, reply) => {
    const { token } = request.params as { token: string };
    const { user, invitation } = await services.users.openInvitation(token);
    return passwordPage(request, reply, 200, token, user.email, invitation.purpose === 'reset');
  });

  app.post('/invitations/:token', { config: { web: 'public' } }, async (request, reply) => {
    const { token } = request.params as { token: string };
    const password = formText(request, 'password');
    const { user, invitation } = await services.users.openInvitation(token);
    if (password !== formText(request, 'confirm')) return passwordPage(request, reply, 422, token, user.email, invitation.purpose === 'reset', 'The two passwords differ.');
    try {
      await services.users.acceptInvitation(token, password);
    } catch (err) {
      if (err instanceof ServiceError && err.code === 'validation_failed') return passwordPage(request, reply, 422, token, user.email, invitation.purpose === 'reset', err.message);
      throw err;
    }
    return reply.redirect('/sign-in?done=password', 303);
  });

  if (!dashboard.signup) return;
  app.get('/sign-up', { config: { web: 'public' } }, async (request, reply) => signUpPage(request, reply, 200));
  app.post('/sign-up', { config: { web: 'public' } }, async (request, reply) => {
    try {
      await services.users.signUp({ accountName: formText(request, 'account_name'), email: formText(request, 'email'), password: formText(request, 'password') });
    } catch (err) {
      if (err instanceof ServiceError && err.code === 'validation_failed') return signUpPage(request, reply, 422, err.message);
      throw err;
    }
    return reply.redirect('/sign-in', 303);
  });
}

/**
 * The audit rows of a failed sign-in, as the token endpoint writes them (failure-throttle.ts):
 * one per failure while answered 401; once refused, one `auth.throttled` row for each counter
 * whose refusal this failure started, and nothing for the refused attempts after it.
 */
function signInFailureAudit(ip: string, email: string, outcome: FailureOutcome): AuditEntry[] {
  const address = { actor: 'anonymous', ip, clientId: null, accountId: null };
  if (!outcome.refused) return [{ ...address, action: 'user.sign_in_failed', detail: { email: email.slice(0, 320) } }];
  return outcome.refusalStarted.map((key) => ({
    ...address,
    action: 'auth.throttled' as const,
    detail: { key: key === 'client' ? 'email' : 'address', ...(key === 'client' ? { email: email.slice(0, 320) } : {}), after: 'user.sign_in_failed', retry_after: outcome.retryAfterSeconds },
  }));
}

/** Where to go after signing in: a path of this site only, never another site (`//host`, `/\host`). */
/** Resolves the sign-in's `next` the way a browser will, to tell same-origin paths apart. */
const SELF = 'http://tollwatch.invalid';

/**
 * Where a sign-in may lead: a path on this site, as the URL parser reads it. A browser drops tabs
 * and line breaks and reads `\` as `/`, so `/\t/evil.example/` is `//evil.example/`, another
 * site; judged after parsing, it is. What is answered is the parsed path, percent-encoded, so
 * that no character of `next` can break the `Location` header either.
 */
function safeNext(next: string): string {
  if (!next.startsWith('/')) return '/';
  let url: URL;
  try {
    url = new URL(next, SELF);
  } catch {
    return '/';
  }
  return url.origin === SELF ? `${url.pathname}${url.search}${url.hash}` : '/';
}

function signInPage(request: FastifyRequest, reply: FastifyReply, status: number, next = '/', notice?: string, error?: string) {
  return sendPage(
    request,
    reply,
    'Sign in',
    html`${notice ? html`<p class="notice" role="status">${notice}</p>` : ''}${error ? html`<p class="error" role="alert">${error}</p>` : ''}
<form method="post" action="/sign-in" class="stack">
${csrfField(request)}<input type="hidden" name="next" value="${next}">
<label for="email">Email</label><input id="email" name="email" type="email" autocomplete="username" required>
<label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required>
<button type="submit">Sign in</button>
</form>`,
    status,
  );
}

function passwordPage(request: FastifyRequest, reply: FastifyReply, status: number, token: string, email: string, reset: boolean, error?: string) {
  return sendPage(
    request,
    reply,
    reset ? 'Choose a new password' : 'Welcome: choose a password',
    html`${error ? html`<p class="error" role="alert">${error}</p>` : ''}
<p>For <strong>${email}</strong>. At least ${MIN_PASSWORD_LENGTH} characters; this link works once.</p>
<form method="post" action="/invitations/${token}" class="stack">
${csrfField(request)}<input type="hidden" name="email" value="${email}" autocomplete="username">
<label for="password">New password</label><input id="password" name="password" type="password" autocomplete="new-password" minlength="${MIN_PASSWORD_LENGTH}" required>
<label for="confirm">The same again</label><input id="confirm" name="confirm" type="password" autocomplete="new-password" minlength="${MIN_PASSWORD_LENGTH}" required>
<button type="submit">Set password</button>
</form>`,
    status,
  );
}

function signUpPage(request: FastifyRequest, reply: FastifyReply, status: number, error?: string) {
  return sendPage(
    request,
    reply,
    'Create an account',
    html`${error ? html`<p class="error" role="alert">${error}</p>` : ''}
<p>A new account starts on the tester plan; the operator can move it to another.</p>
<form method="post" action="/sign-up" class="stack">
${csrfField(request)}
<label for="account_name">Account name</label><input id="account_name" name="account_name" required maxlength="200">
<label for="email">Email</label><input id="email" name="email" type="email" autocomplete="username" required>
<label for="password">Password</label><input id="password" name="password" type="password" autocomplete="new-password" minlength="${MIN_PASSWORD_LENGTH}" required>
<button type="submit">Create account</button>
</form>`,
    status,
  );
}

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ServiceError } from '../../domain/errors.ts';
import { MIN_PASSWORD_LENGTH } from '../../domain/accounts/passwords.ts';
import type { AuditEntry } from '../../domain/accounts/audit.ts';
import type { LockKey } from '../../limits/sign-in-locks.ts';
import type { Services } from '../../services.ts';
import { html } from '../html.ts';
import { csrfField, sendPage } from '../layout.ts';
import { shownNotice } from '../shown-once.ts';
import { durationText } from '../time-text.ts';
import { WebRefusal } from '../web-refusal.ts';
import { SESSION_COOKIE } from '../web-session.ts';
import { completeSignIn } from '../sign-in-completion.ts';
import { formText } from '../form.ts';
import { oidcButton } from './oidc-sign-in.ts';

/** What these routes use of the services. */
type RouteServices = Pick<Services, 'audit' | 'config' | 'oidcSignIn' | 'resetRequests' | 'sessions' | 'signInLocks' | 'users' | 'twoFactor' | 'pendingSignIns'>;

/**
 * Signing in and out and invitation links (docs/dashboard.md, "Sessions"); sign-up is sign-up.ts. Password
 * guesses are bounded per email and per address over time (limits/sign-in-locks.ts), slowed from
 * an address's sixth failure, and refused with 429 past the bound, right password or not.
 */
/** What the sign-in page says after the action its `done` names. */
const SIGNED_OUT_NOTICES: Record<string, string | undefined> = {
  password: 'Your password is set. Sign in with it.',
  'signed-out': 'You are signed out.',
  'signed-out-everywhere': 'You are signed out on every device.',
};

export async function signInRoutes(app: FastifyInstance, { services }: { services: RouteServices }) {
  const { dashboard } = services.config;

  app.get('/sign-in', { config: { web: 'public' } }, async (request, reply) => {
    if (request.web.user) return reply.redirect('/', 303);
    const query = request.query as Record<string, string | undefined>;
    const notice = SIGNED_OUT_NOTICES[query.done ?? ''];
    return signInPage(request, reply, 200, query.next, notice, undefined, query.email, signInWays(services));
  });

  app.post('/sign-in', { config: { web: 'public' } }, async (request, reply) => {
    const email = formText(request, 'email');
    const password = formText(request, 'password');
    const next = formText(request, 'next');
    // The guess is spent before the password is looked at: past the bound, the answer is the
    // same whatever the password, the right one included, so it tells a guesser nothing.
    const attempt = await services.signInLocks.attempt(request.ip, email);
    if (!attempt.allowed) {
      for (const entry of lockAudit(request.ip, email, attempt.lockStarted, attempt.retryAfterSeconds)) {
        services.audit.record(entry).catch((err: unknown) => request.log.warn({ err }, 'audit write failed'));
      }
      if (attempt.lockStarted.includes('email')) {
        services.users.warnOfSignInLock(email, request.ip, attempt.retryAfterSeconds).catch((err: unknown) => request.log.warn({ err }, 'sign-in lock mail failed'));
      }
      throw new WebRefusal(429, `Too many failed sign-ins. Try again in ${durationText(attempt.retryAfterSeconds)}.`, attempt.retryAfterSeconds);
    }
    const user = await services.users.authenticate(email, password);
    if (!user) {
      const failure = { actor: 'anonymous', ip: request.ip, clientId: null, accountId: null, action: 'user.sign_in_failed' as const, detail: { email: email.slice(0, 320) } };
      services.audit.record(failure).catch((err: unknown) => request.log.warn({ err }, 'audit write failed'));
      await services.signInLocks.slowDown(attempt);
      return signInPage(request, reply, 401, next, undefined, 'Wrong email or password.', email, signInWays(services));
    }
    await services.signInLocks.succeeded(request.ip, email);
    return completeSignIn(services, request, reply, user, next, 'password');
  });

  app.post('/sign-out', { config: { web: 'public' } }, async (request, reply) => {
    const sessionId = request.cookies[SESSION_COOKIE];
    if (sessionId) await services.sessions.end(sessionId);
    reply.clearCookie(SESSION_COOKIE, { path: '/' });
    return reply.redirect('/sign-in?done=signed-out', 303);
  });

  app.post('/sign-out-everywhere', { config: { web: 'signed-in' } }, async (request, reply) => {
    const user = request.web.user!;
    await services.sessions.endAll(user.user_id);
    await services.users.recordOwnAction('user.signed_out_everywhere', user, request.ip);
    reply.clearCookie(SESSION_COOKIE, { path: '/' });
    return reply.redirect('/sign-in?done=signed-out-everywhere', 303);
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
    // Whoever holds a fresh link may sign in again at once, even while guessers hold a lock.
    await services.signInLocks.release(user.email);
    return reply.redirect(`/sign-in?${new URLSearchParams({ done: 'password', email: user.email }).toString()}`, 303);
  });

  // Forgot your password: the same answer whether or not the address is a user's, and the mail
  // sent off the answer's path, so neither the words nor the time tell.
  app.get('/forgot-password', { config: { web: 'public' } }, async (request, reply) => {
    const sent = (request.query as Record<string, string | undefined>).sent === '1';
    return forgotPage(request, reply, 200, sent);
  });

  app.post('/forgot-password', { config: { web: 'public' } }, async (request, reply) => {
    const email = formText(request, 'email').trim();
    if (email === '') return forgotPage(request, reply, 422, false, 'Give the email address you sign in with.');
    const attempt = await services.resetRequests.attempt(request.ip, email);
    if (!attempt.allowed) throw new WebRefusal(429, `Too many requests for a new password. Try again in ${durationText(attempt.retryAfterSeconds)}.`, attempt.retryAfterSeconds);
    services.users.sendPasswordReset(email, request.ip).catch((err: unknown) => request.log.warn({ err }, 'password reset mail failed'));
    return reply.redirect('/forgot-password?sent=1', 303);
  });
}

/**
 * The audit rows of a refused sign-in: one `auth.throttled` row for each lock this attempt was
 * the first to meet, and nothing for the refused attempts after it.
 */
export function lockAudit(ip: string, email: string, started: LockKey[], retryAfterSeconds: number, after = 'user.sign_in_failed'): AuditEntry[] {
  return started.map((key) => ({
    actor: 'anonymous',
    ip,
    clientId: null,
    accountId: null,
    action: 'auth.throttled' as const,
    detail: { key, ...(key === 'email' ? { email: email.slice(0, 320) } : {}), after, retry_after: retryAfterSeconds },
  }));
}

function forgotPage(request: FastifyRequest, reply: FastifyReply, status: number, sent: boolean, error?: string) {
  return sendPage(
    request,
    reply,
    'Forgot your password?',
    sent
      ? html`${shownNotice(html`If an account uses that address, a link to set a new password is on its way. It works once, for an hour. No mail? Look in spam, or ask again in a few minutes. If none comes, ask an owner of your account, or whoever runs this Tollwatch, for a new link.`)}<p><a href="/sign-in">Back to sign-in</a></p>`
      : html`${error ? html`<p class="error" role="alert">${error}</p>` : ''}<p>Give the email address you sign in with: a link to set a new password is mailed to it.</p>
<form method="post" action="/forgot-password" class="stack">${csrfField(request)}
<label for="email">Email</label><input id="email" name="email" type="email" autocomplete="username" required>
<button type="submit">Mail me a link</button>
</form>`,
    status,
  );
}

/** The other ways the sign-in page offers: the operator's OpenID provider, and sign-up where open. */
interface SignInWays {
  provider?: string | undefined;
  signUpOpen?: boolean;
}

function signInWays(services: RouteServices): SignInWays {
  return { provider: services.oidcSignIn?.displayName, signUpOpen: services.config.dashboard.signup };
}

function signInPage(request: FastifyRequest, reply: FastifyReply, status: number, next = '/', notice?: string, error?: string, email = '', ways: SignInWays = {}) {
  return sendPage(
    request,
    reply,
    'Sign in',
    html`${notice ? html`<p class="notice" role="status">${notice}</p>` : ''}${error ? html`<p class="error" role="alert">${error}</p>` : ''}
<form method="post" action="/sign-in" class="stack">
${csrfField(request)}<input type="hidden" name="next" value="${next}">
<label for="email">Email</label><input id="email" name="email" type="email" autocomplete="username" required value="${email}">
<label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required${email ? html` autofocus` : ''}>
<button type="submit">Sign in</button>
</form>
<p><a href="/forgot-password">Forgot your password?</a></p>${ways.provider ? oidcButton(ways.provider, next) : ''}${ways.signUpOpen ? html`<p>New here? <a href="/sign-up">Create an account</a>.</p>` : ''}`,
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

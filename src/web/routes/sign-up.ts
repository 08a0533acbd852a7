import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { MIN_PASSWORD_LENGTH } from '../../domain/accounts/passwords.ts';
import { checkSignUpForm, type SignUpForm } from '../../domain/accounts/sign-ups.ts';
import { ServiceError } from '../../domain/errors.ts';
import type { Services } from '../../services.ts';
import { FieldErrors } from '../field-errors.ts';
import { formText } from '../form.ts';
import { html } from '../html.ts';
import { csrfField, sendPage } from '../layout.ts';
import { shownNotice } from '../shown-once.ts';
import { durationText } from '../time-text.ts';
import { WebRefusal } from '../web-refusal.ts';
import { cookieOptions, SESSION_COOKIE } from '../web-session.ts';

/** What these routes use of the services. */
type RouteServices = Pick<Services, 'config' | 'sessions' | 'signUps' | 'signUpRequests' | 'users'>;

const LABELS = { email: 'The email', password: 'The password', account_name: 'The account name' };

/**
 * Open sign-up (docs/dashboard.md, "Sign-up"), served only with TOLLWATCH_SIGN_UP=open. The form
 * is answered the same whether or not its address has a user, and the mail goes off the answer's
 * path, so neither the words nor the time tell; the mailed link, opened, asks for one click (a
 * mail scanner that fetches links creates nothing), which creates the account and signs in.
 */
export async function signUpRoutes(app: FastifyInstance, { services }: { services: RouteServices }) {
  const { dashboard } = services.config;
  if (!dashboard.signup) return;

  app.get('/sign-up', { config: { web: 'public' } }, async (request, reply) => {
    if ((request.query as Record<string, string | undefined>).sent === '1') {
      return sendPage(
        request,
        reply,
        'Check your mail',
        html`${shownNotice(html`A link to create your account is on its way. It works once, for 24 hours; nothing is created until you follow it. No mail? Look in spam, or sign up again in a few minutes.`)}<p><a href="/sign-in">Back to sign-in</a></p>`,
      );
    }
    return signUpPage(request, reply, services, 200);
  });

  app.post('/sign-up', { config: { web: 'public' } }, async (request, reply) => {
    const given: SignUpForm = { email: formText(request, 'email'), password: formText(request, 'password'), accountName: formText(request, 'account_name') };
    let form: SignUpForm;
    try {
      form = checkSignUpForm(given);
    } catch (err) {
      if (err instanceof ServiceError && err.code === 'validation_failed') return signUpPage(request, reply, services, 422, given, err);
      throw err;
    }
    const attempt = await services.signUpRequests.attempt(request.ip, form.email);
    if (!attempt.allowed) throw new WebRefusal(429, `Too many sign-ups. Try again in ${durationText(attempt.retryAfterSeconds)}.`, attempt.retryAfterSeconds);
    services.signUps.request(form, request.ip).catch((err: unknown) => request.log.warn({ err }, 'sign-up mail failed'));
    return reply.redirect('/sign-up?sent=1', 303);
  });

  app.get('/sign-up/:token', { config: { web: 'public' } }, async (request, reply) => {
    const { token } = request.params as { token: string };
    const pending = await services.signUps.open(token);
    return sendPage(
      request,
      reply,
      'Create your account',
      html`<p>Create the account <strong>${pending.account_name}</strong> for <strong>${pending.email}</strong>, with the password you chose. You will be its owner, and signed in.</p>
<form method="post" action="/sign-up/${token}" class="stack">${csrfField(request)}
<button type="submit">Create my account</button>
</form>`,
    );
  });

  app.post('/sign-up/:token', { config: { web: 'public' } }, async (request, reply) => {
    const { token } = request.params as { token: string };
    const user = await services.signUps.confirm(token, request.ip);
    const previous = request.cookies[SESSION_COOKIE];
    if (previous) await services.sessions.end(previous);
    const sessionId = await services.sessions.start(user.user_id);
    await services.users.recordOwnAction('user.signed_in', user, request.ip);
    reply.setCookie(SESSION_COOKIE, sessionId, cookieOptions(services, dashboard.sessionMaxSeconds));
    return reply.redirect('/settings/account', 303);
  });
}

function signUpPage(request: FastifyRequest, reply: FastifyReply, services: RouteServices, status: number, given?: SignUpForm, err?: ServiceError) {
  const errors = new FieldErrors(err, LABELS);
  return sendPage(
    request,
    reply,
    'Create an account',
    html`${err ? html`<div class="error" role="alert"><p>The account could not be asked for:</p>${errors.summary()}</div>` : ''}
<p>A new account starts on the <strong>${services.config.dashboard.signUpPlan}</strong> plan. We mail a link to the address you give: the account is created when you follow it.</p>
<form method="post" action="/sign-up" class="stack">
${csrfField(request)}
<label for="account_name">Account name</label><input id="account_name" name="account_name" required maxlength="200" value="${given?.accountName ?? ''}"${errors.attributes('account_name')}>${errors.note('account_name')}
<label for="email">Email</label><input id="email" name="email" type="email" autocomplete="username" required maxlength="320" value="${given?.email ?? ''}"${errors.attributes('email')}>${errors.note('email')}
<label for="password">Password <span class="hint">(at least ${MIN_PASSWORD_LENGTH} characters)</span></label><input id="password" name="password" type="password" autocomplete="new-password" minlength="${MIN_PASSWORD_LENGTH}" required${errors.attributes('password')}>${errors.note('password')}
<button type="submit">Sign up</button>
</form>
<p>Have an account? <a href="/sign-in">Sign in</a>.</p>`,
    status,
  );
}

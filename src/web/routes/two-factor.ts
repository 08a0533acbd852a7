import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { RECOVERY_CODE_COUNT } from '../../domain/accounts/two-factor.ts';
import type { User } from '../../domain/accounts/users.ts';
import { ServiceError } from '../../domain/errors.ts';
import type { SignInAttempt } from '../../limits/sign-in-locks.ts';
import type { Services } from '../../services.ts';
import { formText } from '../form.ts';
import { html, type Html } from '../html.ts';
import { csrfField, sendPage } from '../layout.ts';
import { qrCodeSvg } from '../qr-code.ts';
import { heldView, redirectShowingOnce, shownNotice } from '../shown-once.ts';
import { PENDING_COOKIE, startSession } from '../sign-in-completion.ts';
import { ENROLMENT_PATH, SECOND_STEP_PATH } from '../two-factor-paths.ts';
import { durationText } from '../time-text.ts';
import { WebRefusal } from '../web-refusal.ts';
import { userOf } from '../web-session.ts';
import { lockAudit } from './sign-in.ts';

/** What these routes use of the services. */
type RouteServices = Pick<Services, 'audit' | 'config' | 'pendingSignIns' | 'secondStepLocks' | 'sessions' | 'twoFactor' | 'users'>;

/** Which form of the settings page a refusal belongs to. */
type SettingsForm = 'confirm' | 'regenerate' | 'disable';

/**
 * Two-factor sign-in (docs/dashboard.md, "Two-factor sign-in"): the second step of a sign-in,
 * and each user's settings page, where it is set up (a QR code and the secret, then a first code),
 * its recovery codes made again, or it is turned off. Wrong codes, at the second step and on the
 * settings page alike, are bounded per user and per address as passwords are, and refused with
 * 429 past the bound, right code or not.
 */
export async function twoFactorRoutes(app: FastifyInstance, { services }: { services: RouteServices }) {
  app.get(SECOND_STEP_PATH, { config: { web: 'public' } }, async (request, reply) => {
    if (request.web.user) return reply.redirect('/', 303);
    if (!(await pendingOf(services, request))) return reply.redirect('/sign-in', 303);
    return secondStepPage(request, reply, 200);
  });

  app.post(SECOND_STEP_PATH, { config: { web: 'public' } }, async (request, reply) => {
    const token = request.cookies[PENDING_COOKIE] ?? '';
    const pending = await pendingOf(services, request);
    const user = pending && (await services.users.getUser(pending.user_id).catch(() => undefined));
    if (!pending || !user || user.disabled) throw expiredSignIn(reply);
    const attempt = await spendGuess(services, request, user, 'user.sign_in_failed');
    const result = await services.twoFactor.secondStep(user, formText(request, 'code'));
    if (!result.accepted) {
      const failure = { actor: 'anonymous', ip: request.ip, clientId: null, accountId: user.account_id, action: 'user.sign_in_failed' as const, detail: { email: user.email, step: 'second' } };
      services.audit.record(failure).catch((err: unknown) => request.log.warn({ err }, 'audit write failed'));
      await services.secondStepLocks.slowDown(attempt);
      return secondStepPage(request, reply, 401, 'That code is wrong, or was used already. Give the code your app shows now, or a recovery code.');
    }
    await services.secondStepLocks.succeeded(request.ip, user.user_id);
    // Spent by exactly one request: a second tab sending the same step signs in nobody.
    if (!(await services.pendingSignIns.finish(token))) throw expiredSignIn(reply);
    reply.clearCookie(PENDING_COOKIE, { path: '/sign-in' });
    const shown = result.recoveryCodesLeft === undefined ? undefined : { shown: 'recovery-used', left: result.recoveryCodesLeft };
    return startSession(services, request, reply, user, pending.next, pending.method, shown);
  });

  app.get(ENROLMENT_PATH, { config: { web: 'signed-in', twoFactorSetup: true } }, async (request, reply) => settingsPage(services, request, reply));

  app.post(`${ENROLMENT_PATH}/start`, { config: { web: 'signed-in', twoFactorSetup: true } }, async (request, reply) => {
    await services.twoFactor.start(userOf(request));
    return reply.redirect(ENROLMENT_PATH, 303);
  });

  app.post(`${ENROLMENT_PATH}/confirm`, { config: { web: 'signed-in', twoFactorSetup: true } }, async (request, reply) => {
    try {
      const codes = await services.twoFactor.confirm(userOf(request), formText(request, 'code'));
      return redirectShowingOnce(services, request, reply, ENROLMENT_PATH, { shown: 'recovery-codes', codes, first: true });
    } catch (err) {
      return refusedOn(services, request, reply, 'confirm', err);
    }
  });

  app.post(`${ENROLMENT_PATH}/recovery-codes`, { config: { web: 'signed-in' } }, async (request, reply) => {
    const user = userOf(request);
    const attempt = await spendGuess(services, request, user, 'user.recovery_codes_refused');
    try {
      const codes = await services.twoFactor.regenerateRecoveryCodes(user, formText(request, 'code'));
      await services.secondStepLocks.succeeded(request.ip, user.user_id);
      return redirectShowingOnce(services, request, reply, ENROLMENT_PATH, { shown: 'recovery-codes', codes, first: false });
    } catch (err) {
      return refusedOn(services, request, reply, 'regenerate', err, attempt);
    }
  });

  app.post(`${ENROLMENT_PATH}/disable`, { config: { web: 'signed-in' } }, async (request, reply) => {
    const user = userOf(request);
    const attempt = await spendGuess(services, request, user, 'user.two_factor_disable_refused');
    try {
      await services.twoFactor.disable(user, formText(request, 'code'));
      await services.secondStepLocks.succeeded(request.ip, user.user_id);
      return redirectShowingOnce(services, request, reply, ENROLMENT_PATH, { shown: 'disabled' });
    } catch (err) {
      return refusedOn(services, request, reply, 'disable', err, attempt);
    }
  });

  app.post('/settings/account/two-factor', { config: { web: 'owner' } }, async (request, reply) => {
    const required = formText(request, 'required') === 'on';
    await services.twoFactor.setRequired(userOf(request), required);
    return redirectShowingOnce(services, request, reply, '/settings/account', { shown: 'two-factor-required', required });
  });
}

/** The sign-in this browser's pending cookie names, while it lasts. */
async function pendingOf(services: RouteServices, request: FastifyRequest) {
  const token = request.cookies[PENDING_COOKIE];
  return token ? services.pendingSignIns.open(token) : undefined;
}

function expiredSignIn(reply: FastifyReply): WebRefusal {
  reply.clearCookie(PENDING_COOKIE, { path: '/sign-in' });
  return new WebRefusal(401, 'This sign-in has expired or is finished: sign in again with your password.');
}

/**
 * Spends one guess of the user's (and of the address's) before a code is looked at: past the
 * bound the answer is 429 whatever the code, so it tells a guesser nothing. A failure is slowed
 * as a wrong password is, once the address has used its free failures.
 */
async function spendGuess(services: RouteServices, request: FastifyRequest, user: User, after: string): Promise<Extract<SignInAttempt, { allowed: true }>> {
  const attempt = await services.secondStepLocks.attempt(request.ip, user.user_id);
  if (!attempt.allowed) {
    for (const entry of lockAudit(request.ip, user.email, attempt.lockStarted, attempt.retryAfterSeconds, after)) {
      services.audit.record({ ...entry, accountId: user.account_id }).catch((err: unknown) => request.log.warn({ err }, 'audit write failed'));
    }
    if (attempt.lockStarted.includes('email')) {
      services.twoFactor.warnOfCodeGuessing(user, request.ip, attempt.retryAfterSeconds).catch((err: unknown) => request.log.warn({ err }, 'two-factor lock mail failed'));
    }
    throw new WebRefusal(429, `Too many wrong codes. Try again in ${durationText(attempt.retryAfterSeconds)}.`, attempt.retryAfterSeconds);
  }
  return attempt;
}

/** A refused code (or a refused turning off) on the settings page: the page again, the reason at its form. */
async function refusedOn(services: RouteServices, request: FastifyRequest, reply: FastifyReply, form: SettingsForm, err: unknown, attempt?: Extract<SignInAttempt, { allowed: true }>): Promise<FastifyReply> {
  if (!(err instanceof ServiceError) || err.code !== 'validation_failed') throw err;
  if (attempt) await services.secondStepLocks.slowDown(attempt);
  return settingsPage(services, request, reply, { form, message: sentence(err.message) }, 422);
}

function sentence(message: string): string {
  return `${message.charAt(0).toUpperCase()}${message.slice(1)}.`;
}

function secondStepPage(request: FastifyRequest, reply: FastifyReply, status: number, error?: string) {
  return sendPage(
    request,
    reply,
    'Two-factor sign-in',
    html`${error ? html`<p class="error" role="alert" id="code-error">${error}</p>` : ''}
<p>Your password is right. Now give the six-digit code your authenticator app shows for Tollwatch, or one of your recovery codes (each works once).</p>
<form method="post" action="${SECOND_STEP_PATH}" class="stack">${csrfField(request)}
<label for="code">Code from your app, or a recovery code</label><input id="code" name="code" autocomplete="one-time-code" autocapitalize="none" spellcheck="false" maxlength="40" required autofocus${error ? html` aria-invalid="true" aria-describedby="code-error"` : ''}>
<button type="submit">Sign in</button>
</form>
<p>Lost your phone and your recovery codes? Ask whoever runs this Tollwatch to reset two-factor sign-in for you. <a href="/sign-in">Start again</a></p>`,
    status,
  );
}

async function settingsPage(services: RouteServices, request: FastifyRequest, reply: FastifyReply, refused?: { form: SettingsForm; message: string }, status = 200): Promise<FastifyReply> {
  const user = userOf(request);
  const held = refused ? undefined : await heldView(services, request);
  const [state, due, required] = await Promise.all([
    services.twoFactor.state(user),
    services.twoFactor.enrolmentDue(user),
    user.account_id === null ? false : services.twoFactor.required(user.account_id),
  ]);
  const field = (form: SettingsForm, label: string, button: Html, danger = false) => html`<form method="post" action="${ENROLMENT_PATH}/${form === 'confirm' ? 'confirm' : form === 'regenerate' ? 'recovery-codes' : 'disable'}" class="stack">${csrfField(request)}
<label for="${form}-code">${label}</label><input id="${form}-code" name="code" autocomplete="one-time-code" inputmode="numeric" maxlength="12" required${refused?.form === form ? html` aria-invalid="true" aria-describedby="${form}-error" autofocus` : ''}>${refused?.form === form ? html`<p class="field-error" id="${form}-error">${refused.message}</p>` : ''}
<button type="submit"${danger ? html` class="danger"` : ''}>${button}</button>
</form>`;
  let body: Html;
  if (state.enrolled) {
    body = html`<p>Two-factor sign-in is <strong>on</strong>: after your password, you give the code your authenticator app shows, or a recovery code. <strong>${state.recoveryCodesLeft} of ${RECOVERY_CODE_COUNT}</strong> recovery codes left.</p>
<h2>New recovery codes</h2>
<p>Makes ${RECOVERY_CODE_COUNT} new recovery codes; the ones you have stop working.</p>
${field('regenerate', 'Code from your app', html`Make new recovery codes`)}
<h2>Turn off</h2>
${required ? html`<p>Your account’s owners require two-factor sign-in of every user, so it stays on.</p>` : field('disable', 'Code from your app', html`Turn off two-factor sign-in`, true)}`;
  } else if (state.awaited) {
    const qr = await qrCodeSvg(state.awaited.uri, 'QR code to scan with your authenticator app');
    body = html`<ol>
<li>Open an authenticator app on your phone (any app for TOTP codes) and add an account by scanning this code, or by typing in the secret below.</li>
<li>Give the six-digit code the app then shows for Tollwatch.</li>
</ol>
<div class="qr-code">${qr}</div>
<dl class="credentials">
<dt>Secret, to type in instead</dt><dd><code id="totp-secret">${state.awaited.secret}</code> <button type="button" class="copy" data-copy="totp-secret">Copy</button></dd>
<dt>Setup link</dt><dd><code id="totp-uri">${state.awaited.uri}</code> <button type="button" class="copy" data-copy="totp-uri">Copy</button></dd>
</dl>
${field('confirm', 'Code from your app', html`Turn on two-factor sign-in`)}
<form method="post" action="${ENROLMENT_PATH}/start">${csrfField(request)}<button type="submit" class="link">Start again with a new secret</button></form>`;
  } else {
    body = html`<p>Two-factor sign-in is <strong>off</strong>. Turned on, signing in asks for your password and then a six-digit code from an authenticator app on your phone, so a stolen password alone signs no one in.</p>
<form method="post" action="${ENROLMENT_PATH}/start">${csrfField(request)}<button type="submit">Set up two-factor sign-in</button></form>`;
  }
  const notice = heldNotice(held);
  const dueNotice = due && !notice ? html`<p class="notice" role="status">Your account’s owners require two-factor sign-in: set it up to go on.</p>` : '';
  const error = refused ? html`<p class="error" role="alert">${refused.message}</p>` : '';
  return sendPage(request, reply, 'Two-factor sign-in', html`${notice}${dueNotice}${error}${body}${state.enrolled && !due ? html`<p><a href="${user.role === 'operator' ? '/' : '/settings/account'}">Back</a></p>` : ''}`, status);
}

/** What the page shows once after a form: the recovery codes (only now), a recovery code spent, turned off. */
function heldNotice(held: Record<string, unknown> | undefined): Html | '' {
  if (held?.shown === 'disabled') return shownNotice(html`Two-factor sign-in is off: you sign in with your password alone.`);
  if (held?.shown === 'recovery-used') return shownNotice(html`You signed in with a recovery code, now spent: <strong>${String(held.left)}</strong> left. Make new ones below if you are running out.`);
  if (held?.shown !== 'recovery-codes' || !Array.isArray(held.codes)) return '';
  const codes = held.codes.map((c) => html`<li><code>${String(c)}</code></li>`);
  return html`${shownNotice(held.first ? html`Two-factor sign-in is on. Keep these recovery codes somewhere safe, apart from your phone: each signs you in once if you lose the app. They are shown only now.` : html`Your new recovery codes; the old ones no longer work. They are shown only now.`)}
<ul class="recovery-codes" id="recovery-codes" aria-label="Recovery codes">${codes}</ul>
<p><button type="button" class="copy" data-copy="recovery-codes">Copy the codes</button></p>`;
}

/** The account page's part (an owner may require two-factor sign-in of every user), with what its form did. */
export async function twoFactorSection(services: Pick<Services, 'twoFactor'>, request: FastifyRequest, held: Record<string, unknown> | undefined): Promise<Html> {
  const user = userOf(request);
  const [mine, required] = await Promise.all([services.twoFactor.enrolled(user.user_id), user.account_id === null ? false : services.twoFactor.required(user.account_id)]);
  const notice = held?.shown === 'two-factor-required' ? shownNotice(held.required ? html`Every user of this account now needs two-factor sign-in; those without it set it up at their next page.` : html`Two-factor sign-in is no longer required; each user chooses.`) : '';
  const ownerForm = user.role === 'owner'
    ? html`<form method="post" action="/settings/account/two-factor">${csrfField(request)}<input type="hidden" name="required" value="${required ? 'off' : 'on'}"><button type="submit">${required ? 'Stop requiring two-factor sign-in' : 'Require two-factor sign-in for every user'}</button></form>`
    : '';
  return html`<h2>Two-factor sign-in</h2>
${notice}<p>For you: <strong>${mine ? 'on' : 'off'}</strong>. <a href="${ENROLMENT_PATH}">${mine ? 'Manage two-factor sign-in' : 'Set up two-factor sign-in'}</a></p>
<p>This account ${required ? html`<strong>requires</strong> two-factor sign-in of every user.` : html`leaves two-factor sign-in to each user.`}</p>
${ownerForm}`;
}

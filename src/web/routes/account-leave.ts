import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ServiceError } from '../../domain/errors.ts';
import type { Services } from '../../services.ts';
import { durationText } from '../time-text.ts';
import { FieldErrors } from '../field-errors.ts';
import { formText } from '../form.ts';
import { html } from '../html.ts';
import { csrfField, sendPage } from '../layout.ts';
import { WebRefusal } from '../web-refusal.ts';
import { accountOf, SESSION_COOKIE, userOf } from '../web-session.ts';

type RouteServices = Pick<Services, 'accountExports' | 'accountClosing' | 'users' | 'signInLocks'>;

/** What the confirmation form calls each field, for its errors. */
const LABELS = { name: 'The name typed', password: 'Your password' };

/** Settings → account: an owner downloads everything the account holds, or closes it (docs/dashboard.md, "Leaving"). */
export async function accountLeaveRoutes(app: FastifyInstance, { services }: { services: RouteServices }) {
  app.get('/settings/account/export', { config: { web: 'owner' } }, async (request, reply) => {
    const account = accountOf(request);
    const lines = await services.accountExports.open(account.account_id, `user:${userOf(request).user_id}`);
    return reply
      .type('application/x-ndjson; charset=utf-8')
      .header('content-disposition', `attachment; filename="tollwatch-account-${account.account_id}.ndjson"`)
      .send(Readable.from(lines));
  });

  app.get('/settings/account/close', { config: { web: 'owner' } }, async (request, reply) => closePage(request, reply));

  app.post('/settings/account/close', { config: { web: 'owner' } }, async (request, reply) => {
    const account = accountOf(request);
    const me = userOf(request);
    const name = formText(request, 'name');
    const password = formText(request, 'password');
    const wrong: Array<{ field: string; message: string }> = [];
    if (name.trim() !== account.name) wrong.push({ field: 'name', message: 'does not match the account’s name' });
    // A password guess here is a sign-in guess: the same locks bound both.
    const attempt = await services.signInLocks.attempt(request.ip, me.email);
    if (!attempt.allowed) throw new WebRefusal(429, `Too many wrong passwords. Try again in ${durationText(attempt.retryAfterSeconds)}.`, attempt.retryAfterSeconds);
    const confirmed = (await services.users.authenticate(me.email, password))?.user_id === me.user_id;
    if (confirmed) await services.signInLocks.succeeded(request.ip, me.email);
    else {
      await services.signInLocks.slowDown(attempt);
      wrong.push({ field: 'password', message: 'is not right' });
    }
    if (wrong.length > 0) return closePage(request, reply, new FieldErrors(new ServiceError('validation_failed', 'not confirmed', wrong), LABELS), name);

    await services.accountClosing.begin(account.account_id, 'owner');
    // Refused everywhere from here on; the erasure runs on after the answer (and, should this
    // process stop first, the next start or maintenance pass finishes it).
    services.accountClosing.finish(account.account_id).catch((err: unknown) => request.log.warn({ err }, 'closing an account stopped; the next maintenance pass finishes it'));
    reply.clearCookie(SESSION_COOKIE, { path: '/' });
    request.web = { ...request.web, user: undefined, account: undefined };
    return sendPage(request, reply, 'Account closed', html`<p role="status">The account is closed: its clients’ tokens are refused, everyone is signed out, and its events, clients, users and settings are being erased for good.</p>
<p><a href="/sign-in">Sign in</a> with another account.</p>`);
  });
}

function closePage(request: FastifyRequest, reply: FastifyReply, errors?: FieldErrors, name = '') {
  const account = accountOf(request);
  const e = errors ?? new FieldErrors(undefined, LABELS);
  return sendPage(
    request,
    reply,
    'Close this account',
    html`${errors ? html`<div role="alert" class="error"><p>The account was not closed:</p>${e.summary()}</div>` : ''}
<p>Closing <strong>${account.name}</strong> cannot be undone. At once its API clients’ tokens and node ingest URLs are refused and every one of its users is signed out; then its events, lookups’ own counts, clients, users, integrations, allowlist, reports and audit trail are erased. Counts its events added to the shared data set stay, without its name.</p>
<p><a href="/settings/account/export" download>Download everything first</a> (one NDJSON file).</p>
<form method="post" action="/settings/account/close" class="stack">${csrfField(request)}
<label for="close-name">Type the account’s name, <strong>${account.name}</strong></label><input id="close-name" name="name" type="text" required autocomplete="off" value="${name}"${e.attributes('name')}>${e.note('name')}
<label for="close-password">Your password</label><input id="close-password" name="password" type="password" required autocomplete="current-password"${e.attributes('password')}>${e.note('password')}
<button type="submit" class="danger">Close the account for good</button> <a href="/settings/account">Cancel</a>
</form>`,
    errors ? 422 : 200,
  );
}

/** The owner's way out, on the account page: the export, and closing (asked first, on a page of its own). */
export function leaveSection(): ReturnType<typeof html> {
  return html`<h2>Leaving</h2>
<p>Everything this account holds (its events, clients, users, integrations, nodes, allowlist, reports and audit trail; no secret) as one NDJSON file.</p>
<p><a href="/settings/account/export" download>Download everything</a> <a href="/settings/account/close">Close this account…</a></p>`;
}

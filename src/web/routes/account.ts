import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Account } from '../../domain/accounts/accounts.ts';
import { ServiceError } from '../../domain/errors.ts';
import type { UserView } from '../../domain/accounts/users.ts';
import type { Plan, RateWindow } from '../../domain/accounts/plans.ts';
import type { LimitGroup } from '../../limits/plan-limiter.ts';
import type { Services } from '../../services.ts';
import { durationText, toMinute } from '../time-text.ts';
import { html, type Html } from '../html.ts';
import { FieldErrors } from '../field-errors.ts';
import { formText } from '../form.ts';
import { csrfField, sendPage } from '../layout.ts';
import { heldView, redirectShowingOnce, shownNotice } from '../shown-once.ts';
import { accountOf, userOf } from '../web-session.ts';
import { twoFactorSection } from './two-factor.ts';
import { leaveSection } from './account-leave.ts';
import { countText, rateText } from '../../domain/readable-numbers.ts';
import { communitySection, type CommunityServices } from './contributors.ts';

/** What these routes use of the services. */
type RouteServices = Pick<Services, 'accounts' | 'config' | 'ingestUrls' | 'limiter' | 'plans' | 'sessions' | 'twoFactor' | 'users'> & CommunityServices;

/** One allowance of a plan with what the account spent of it in the current window. */
export interface AllowanceUsage {
  group: LimitGroup;
  label: string;
  window: RateWindow;
  used: number;
  resetSeconds: number;
}

/** The plan's allowances and this window's use of each, read from the same counters the API spends. */
export async function usageOf(services: Pick<Services, 'limiter'>, account: Account, plan: Plan): Promise<AllowanceUsage[]> {
  const groups: Array<[LimitGroup, string, RateWindow | null]> = [
    ['lookups', 'Lookups (phone numbers and addresses)', plan.lookups],
    ['submissions', 'Event submissions', plan.submissions],
    ['event_reads', 'Event reads through the API', plan.eventReads],
  ];
  const usage: AllowanceUsage[] = [];
  for (const [group, label, window] of groups) {
    if (!window) continue;
    usage.push({ group, label, window, ...(await services.limiter.usage(group, account.account_id, window)) });
  }
  return usage;
}

/** Settings → account (docs/dashboard.md): plan, limits and use, users, what a SentryPeer node needs. */
export async function accountRoutes(app: FastifyInstance, { services }: { services: RouteServices }) {
  app.get('/settings/account', { config: { web: 'account' } }, async (request, reply) => accountPage(services, request, reply));

  // An owner's teammates: invited (the link mailed, or shown once), given a role, removed.
  app.post('/settings/account/users', { config: { web: 'owner' } }, async (request, reply) => {
    try {
      const issued = await services.users.inviteTeammate(userOf(request), { email: formText(request, 'email').trim(), role: formText(request, 'role') });
      return redirectShowingOnce(services, request, reply, '/settings/account', { shown: 'invited', ...issued });
    } catch (err) {
      if (err instanceof ServiceError && err.code === 'validation_failed') {
        return accountPage(services, request, reply, { email: formText(request, 'email'), role: formText(request, 'role'), errors: new FieldErrors(err, { email: 'The email address', role: 'The role' }) });
      }
      if (err instanceof ServiceError && err.code === 'mail_unavailable') {
        const refused = { email: formText(request, 'email'), role: formText(request, 'role'), errors: new FieldErrors(undefined, {}), refusal: 'The mail server did not take the invitation, so nothing was saved; try again in a few minutes' };
        return accountPage(services, request, reply, refused, 502);
      }
      throw err;
    }
  });

  // Removing is asked first, on a page of its own (no script needed), as deleting a client is.
  app.get('/settings/account/users/:id/remove', { config: { web: 'owner' } }, async (request, reply) => {
    const me = userOf(request);
    const teammate = (await services.users.team(accountOf(request).account_id)).find((u) => u.user_id === (request.params as { id: string }).id && u.user_id !== me.user_id && !u.disabled);
    if (!teammate) throw new ServiceError('not_found', 'no such teammate');
    return sendPage(request, reply, `Remove ${teammate.email}?`, html`<p><strong>${teammate.email}</strong> (${teammate.role}) is signed out at once, everywhere, and can no longer sign in to this account. The user is kept, disabled, for the audit trail.</p>
<form method="post" action="/settings/account/users/${teammate.user_id}">${csrfField(request)}<input type="hidden" name="action" value="remove"><button type="submit" class="danger">Remove ${teammate.email}</button> <a href="/settings/account">Cancel</a></form>`);
  });

  app.post('/settings/account/users/:id', { config: { web: 'owner' } }, async (request, reply) => {
    const { id } = request.params as { id: string };
    let changed: UserView;
    const removing = formText(request, 'action') === 'remove';
    try {
      changed = removing ? await services.users.removeTeammate(userOf(request), id) : await services.users.setTeammateRole(userOf(request), id, formText(request, 'role'));
    } catch (err) {
      if (err instanceof ServiceError && err.code === 'validation_failed') return accountPage(services, request, reply, { email: '', role: 'member', errors: new FieldErrors(undefined, {}), refusal: err.message });
      throw err;
    }
    return redirectShowingOnce(services, request, reply, '/settings/account', { shown: removing ? 'removed' : 'role-changed', email: changed.email, role: changed.role });
  });
}

/** What a refused invitation or change comes back with. */
interface Refused {
  email: string;
  role: string;
  errors: FieldErrors;
  refusal?: string;
}

async function accountPage(services: RouteServices, request: FastifyRequest, reply: FastifyReply, refused?: Refused, refusedStatus = 422) {
  const { config } = services;
  const account = accountOf(request);
  const me = userOf(request);
  const owner = me.role === 'owner';
  const held = await heldView(services, request);
  const [plan, users, clients, ingestUrls] = await Promise.all([
    services.plans.find(account.plan),
    services.users.team(account.account_id),
    services.accounts.listClients(account.account_id),
    services.ingestUrls.list(account.account_id),
  ]);
  const usage = plan ? await usageOf(services, account, plan) : [];
  const community = await communitySection(services, request);
  const usageRows = usage.map(
    (u) => html`<tr><th scope="row">${u.label}</th><td>${rateText(u.window)}</td><td><meter min="0" max="${u.window.limit}" value="${u.used}">${countText(u.used)}</meter> ${countText(u.used)} of ${countText(u.window.limit)} used, resets in ${durationText(u.resetSeconds)}</td></tr>`,
  );
  const userRows = users.map(
    (u) => html`<tr><td data-label="Email" class="wide">${u.email}</td><td data-label="Role">${u.role}</td><td data-label="State">${u.disabled ? 'removed' : u.password_set ? 'active' : 'invited'}</td>${owner ? html`<td class="actions wide" data-label="Actions">${teammateActions(request, me.user_id, u)}</td>` : ''}</tr>`,
  );
  const content = html`<h2>Plan</h2>
<p><strong>${account.plan}</strong>${plan?.maySubmit ? ': may submit events' : ': lookups only (no event submission)'}. Clients: ${countText(clients.length)} of ${plan?.maxClients == null ? 'unlimited' : countText(plan.maxClients)}.</p>
<div class="scroll" tabindex="0" role="region" aria-label="Allowances"><table><thead><tr><th scope="col">Allowance</th><th scope="col">Limit</th><th scope="col">This window</th></tr></thead><tbody>${usageRows}</tbody></table></div>
<h2>Users</h2>
${invitedNotice(held)}${refused?.refusal ? html`<p class="error" role="alert">${refused.refusal}.</p>` : ''}
<div class="scroll" tabindex="0" role="region" aria-label="Users"><table class="cards"><thead><tr><th scope="col">Email</th><th scope="col">Role</th><th scope="col">State</th>${owner ? html`<th scope="col" class="actions">Actions</th>` : ''}</tr></thead><tbody>${userRows}</tbody></table></div>
${owner ? inviteForm(request, refused) : html`<p>The account’s owners invite and remove its users.</p>`}
${await twoFactorSection(services, request, held)}
${community}
<h2>Connecting to the API</h2>
${apiSettings(config.publicUrl, config.audiences)}
<h2>Configuring a SentryPeer node</h2>
${nodeSettings(config.publicUrl, plan?.maySubmit ?? false)}
${ingestUrls.length > 0 ? html`<h3>This account’s node ingest URLs</h3><p>Their secrets were shown once, when the operator created them; here only their names.</p>
<div class="scroll" tabindex="0" role="region" aria-label="Node ingest URLs"><table><thead><tr><th scope="col">Name</th><th scope="col">Created (UTC)</th><th scope="col">Last used (UTC)</th><th scope="col">State</th></tr></thead><tbody>${ingestUrls.map(
    (u) => html`<tr><td>${u.name}</td><td>${toMinute(u.created_at)}</td><td>${u.last_used_at ? toMinute(u.last_used_at) : 'never'}</td><td>${u.revoked_at ? `revoked ${toMinute(u.revoked_at)}` : 'working'}</td></tr>`,
  )}</tbody></table></div>` : ''}
${owner ? leaveSection() : ''}`;
  return sendPage(request, reply, 'Account', content, refused ? refusedStatus : 200);
}

/** An owner's controls on another user's row: change the role, or remove; none on their own row. */
function teammateActions(request: FastifyRequest, me: string, user: UserView): Html | '' {
  if (user.user_id === me || user.disabled) return '';
  const other = user.role === 'owner' ? 'member' : 'owner';
  return html`<form method="post" action="/settings/account/users/${user.user_id}" class="inline">${csrfField(request)}<input type="hidden" name="role" value="${other}"><button type="submit">Make ${other}</button></form>
<a href="/settings/account/users/${user.user_id}/remove" aria-label="Remove ${user.email}…">Remove…</a>`;
}

function inviteForm(request: FastifyRequest, refused?: Refused): Html {
  const errors = refused?.errors ?? new FieldErrors(undefined, {});
  const role = refused?.role ?? 'member';
  return html`<h3>Invite a teammate</h3>
<form method="post" action="/settings/account/users" class="stack">${csrfField(request)}
<label for="invite-email">Email</label><input id="invite-email" name="email" type="email" required maxlength="320" value="${refused?.email ?? ''}"${errors.attributes('email')}>${errors.note('email')}
<label for="invite-role">Role <span class="hint">(a member reads everything and changes nothing; an owner also manages clients, integrations and users)</span></label><select id="invite-role" name="role"${errors.attributes('role')}><option value="member"${role === 'member' ? html` selected` : ''}>member</option><option value="owner"${role === 'owner' ? html` selected` : ''}>owner</option></select>${errors.note('role')}
<button type="submit">Invite</button>
</form>`;
}

/** After an invitation: where its link went, or the link itself, once, when the server sends no mail; after a change, what changed. */
function invitedNotice(held: Record<string, unknown> | undefined): Html | '' {
  if (held?.shown === 'removed') return shownNotice(html`<strong>${String(held.email)}</strong> is removed: signed out everywhere, and unable to sign in.`);
  if (held?.shown === 'role-changed') return shownNotice(html`<strong>${String(held.email)}</strong> is now ${String(held.role)}.`);
  if (held?.shown !== 'invited') return '';
  return held.mailed
    ? shownNotice(html`An invitation is mailed to <strong>${String(held.email)}</strong>; its link works once, until ${toMinute(String(held.expires_at))} UTC.`)
    : html`${shownNotice(html`This server sends no mail: give <strong>${String(held.email)}</strong> this link yourself. It works once, until ${toMinute(String(held.expires_at))} UTC, and is shown only now.`)}<dl class="credentials"><dt>Invitation link</dt><dd><code id="invitation-link">${String(held.link)}</code> <button type="button" class="copy" data-copy="invitation-link">Copy</button></dd></dl>`;
}

/** What any client of the API is configured with: every plan's clients get tokens the same way. */
function apiSettings(publicUrl: string, audiences: string[]): Html {
  return html`<p>Create a client under API clients, then give its id and secret to your program with these:</p>
<dl class="credentials">
${copyable('token-url', 'Token URL', `${publicUrl}/oauth/token`)}
${copyable('audience', 'Audience', audiences[0] ?? `${publicUrl}/api`)}
${copyable('api-url', 'API', `${publicUrl}/api`)}
</dl>
<p>The command-line client and the SDK read <code>TOLLWATCH_URL</code> (<code>${publicUrl}</code>), <code>TOLLWATCH_CLIENT_ID</code> and <code>TOLLWATCH_CLIENT_SECRET</code>; the whole API is described at <a href="/docs">/docs</a>.</p>`;
}

function nodeSettings(publicUrl: string, maySubmit: boolean): Html {
  if (!maySubmit) return html`<p>This plan does not submit events; a node needs the contributor plan.</p>`;
  return html`<p>With OAuth2 (a node built with the token URL above): create a client with <code>write:events</code> under API clients, then:</p>
<dl class="credentials">
${copyable('events-url', 'Webhook (events) URL', `${publicUrl}/api/events`)}
</dl>
<pre class="command"><code id="node-command">sentrypeer -w ${publicUrl}/api/events -i &lt;client_id&gt; -c &lt;client_secret&gt;</code></pre>
<p>A stock node (its token URL fixed when built) posts to a node ingest URL instead, with no credentials but the URL; the operator creates one with <code>tollwatch ingest-urls create</code> and you start the node with <code>sentrypeer -w &lt;ingest url&gt;</code>. Treat that URL as a secret.</p>`;
}

function copyable(id: string, label: string, value: string): Html {
  return html`<dt>${label}</dt><dd><code id="${id}">${value}</code> <button type="button" class="copy" data-copy="${id}">Copy</button></dd>`;
}

import type { FastifyInstance, FastifyRequest } from 'fastify';
import { describeWindow, parseCount, parseWindow } from '../../domain/accounts/plan-notation.ts';
import type { Plan, PlanChanges } from '../../domain/accounts/plans.ts';
import type { Services } from '../../services.ts';
import { formText } from '../form.ts';
import { toSecond } from '../time-text.ts';
import { html, type Html } from '../html.ts';
import { csrfField, sendPage } from '../layout.ts';
import { userOf } from '../web-session.ts';
import { ServiceError } from '../../domain/errors.ts';
import { MAX_REPORT_NOTE, type StoredReport } from '../../domain/intelligence/value-reports.ts';
import { REPORTED_CEILING } from '../../domain/intelligence/scores.ts';

/** What these routes use of the services. */
type RouteServices = Pick<Services, 'accounts' | 'audit' | 'plans' | 'reports' | 'users'>;

const AUDIT_PAGE = 200;

/**
 * Operator pages (docs/dashboard.md): accounts (create, plan, trusted, disabled), plans, the
 * false-positive reports' queue and the audit trail, through the services the CLI's `accounts`,
 * `plans`, `reports` and `audit` commands call.
 */
export async function operatorRoutes(app: FastifyInstance, { services }: { services: RouteServices }) {
  const actor = (request: FastifyRequest) => `user:${userOf(request).user_id}`;

  app.get('/operator/accounts', { config: { web: 'operator' } }, async (request, reply) => {
    const [accounts, plans] = await Promise.all([services.accounts.listAccounts(), services.plans.all()]);
    const planOptions = (selected: string) => plans.map((p) => html`<option${p.name === selected ? html` selected` : ''}>${p.name}</option>`);
    const rows = accounts.map(
      (a) => html`<tr><td>${a.name}<br><code>${a.account_id}</code></td><td>
<form method="post" action="/operator/accounts/${a.account_id}" class="inline">${csrfField(request)}
<label class="visually-hidden" for="plan-${a.account_id}">Plan of ${a.name}</label><select id="plan-${a.account_id}" name="plan">${planOptions(a.plan)}</select>
<label class="check"><input type="checkbox" name="trusted" value="yes"${a.trusted ? html` checked` : ''}> trusted</label>
<label class="check"><input type="checkbox" name="disabled" value="yes"${a.disabled ? html` checked` : ''}> disabled</label>
<button type="submit">Save</button></form></td></tr>`,
    );
    const content = html`<div class="scroll" tabindex="0" role="region" aria-label="Accounts"><table><thead><tr><th scope="col">Account</th><th scope="col">Settings</th></tr></thead><tbody>${rows}</tbody></table></div>
<h2>New account</h2>
<form method="post" action="/operator/accounts" class="stack">${csrfField(request)}
<label for="name">Name</label><input id="name" name="name" required maxlength="200">
<label for="plan">Plan</label><select id="plan" name="plan">${planOptions('tester')}</select>
<label class="check"><input type="checkbox" name="trusted" value="yes"> trusted (its events join the shared data set)</label>
<button type="submit">Create account</button></form>
<p>Users are invited with <code>tollwatch users invite</code>.</p>`;
    return sendPage(request, reply, 'Accounts', content);
  });

  app.post('/operator/accounts', { config: { web: 'operator' } }, async (request, reply) => {
    await services.accounts.createAccount({ name: formText(request, 'name'), plan: formText(request, 'plan'), trusted: formText(request, 'trusted') === 'yes' }, actor(request));
    return reply.redirect('/operator/accounts', 303);
  });

  app.post('/operator/accounts/:id', { config: { web: 'operator' } }, async (request, reply) => {
    const id = (request.params as { id: string }).id;
    const before = await services.accounts.getAccount(id);
    const plan = formText(request, 'plan');
    const trusted = formText(request, 'trusted') === 'yes';
    const disabled = formText(request, 'disabled') === 'yes';
    // Only what changed, so the audit trail records exactly the operator's changes.
    if (plan && plan !== before.plan) await services.accounts.setPlan(id, plan, actor(request));
    if (trusted !== before.trusted) await services.accounts.setTrusted(id, trusted, actor(request));
    if (disabled !== before.disabled) await services.accounts.setDisabled(id, disabled, actor(request));
    return reply.redirect('/operator/accounts', 303);
  });

  app.get('/operator/plans', { config: { web: 'operator' } }, async (request, reply) => {
    const plans = await services.plans.all();
    const forms = plans.map((p) => html`<section class="plan" aria-labelledby="plan-${p.name}"><h2 id="plan-${p.name}">${p.name}</h2>${planForm(request, p)}</section>`);
    return sendPage(
      request,
      reply,
      'Plans',
      html`<p>Limits are written as in <code>tollwatch plans set</code>: <code>N/second</code>, <code>N/minute</code>, <code>N/hour</code> or <code>N/day</code>; submissions may be <code>none</code>, clients <code>unlimited</code>. A change applies to every account on the plan from its next request.</p>
${forms}<section class="plan"><h2>New plan</h2>${planForm(request, undefined)}</section>`,
    );
  });

  app.post('/operator/plans', { config: { web: 'operator' } }, async (request, reply) => {
    await services.plans.change(formText(request, 'name').trim(), planChanges(request), actor(request));
    return reply.redirect('/operator/plans', 303);
  });

  app.get('/operator/reports', { config: { web: 'operator' } }, async (request, reply) => {
    const [pending, accepted] = await Promise.all([services.reports.queue('pending'), services.reports.queue('accepted')]);
    const valueOf = (r: StoredReport) => html`${r.kind === 'number' ? 'Number' : 'Address'} <code>${r.value}</code>`;
    const decision = (r: StoredReport, verb: 'accept' | 'reject', label: string) =>
      html`<form method="post" action="/operator/reports/${r.id}/${verb}" class="inline" aria-label="${label} report ${r.id}">${csrfField(request)}
<label for="${verb}-note-${r.id}">Note (shown to the account)</label><input id="${verb}-note-${r.id}" name="note" maxlength="${MAX_REPORT_NOTE}">
<button type="submit">${label}</button></form>`;
    const pendingRows = pending.map(
      (r) => html`<tr><td>${toSecond(r.created_at)}</td><td>${valueOf(r)}</td><td><code>${r.account_id}</code></td><td>${r.reason}</td><td>${r.note ?? ''}</td>
<td>${decision(r, 'accept', 'Accept')}${decision(r, 'reject', 'Reject')}</td></tr>`,
    );
    const acceptedRows = accepted.map(
      (r) => html`<tr><td>${toSecond(r.decided_at ?? r.created_at)}</td><td>${valueOf(r)}</td><td><code>${r.account_id}</code></td><td>${r.reason}</td><td>${r.decision_note ?? ''}</td><td>${decision(r, 'reject', 'Withdraw')}</td></tr>`,
    );
    const head = (last: string) =>
      html`<thead><tr><th scope="col">At (UTC)</th><th scope="col">Value</th><th scope="col">Account</th><th scope="col">Reason</th><th scope="col">${last}</th><th scope="col">Decision</th></tr></thead>`;
    return sendPage(
      request,
      reply,
      'Reports',
      html`<p>Lookup clients report answers they find wrong. A pending report changes nothing; accepting it holds the value's score at ${REPORTED_CEILING} or less for every caller (docs/scoring.md, "Reports"); rejecting it changes nothing. The same queue is <code>tollwatch reports list</code>.</p>
<h2>Pending (${pending.length})</h2>${pending.length === 0 ? html`<p>No pending reports.</p>` : html`<div class="scroll" tabindex="0" role="region" aria-label="Pending reports"><table>${head('Note')}<tbody>${pendingRows}</tbody></table></div>`}
<h2>Accepted (${accepted.length})</h2>${accepted.length === 0 ? html`<p>No accepted reports.</p>` : html`<div class="scroll" tabindex="0" role="region" aria-label="Accepted reports"><table>${head('Decision note')}<tbody>${acceptedRows}</tbody></table></div>`}`,
    );
  });

  app.post('/operator/reports/:id/:verb', { config: { web: 'operator' } }, async (request, reply) => {
    const { id, verb } = request.params as { id: string; verb: string };
    const note = formText(request, 'note');
    if (verb === 'accept') await services.reports.accept(id, note, actor(request));
    else if (verb === 'reject') await services.reports.reject(id, note, actor(request));
    else throw new ServiceError('not_found', 'no such decision');
    return reply.redirect('/operator/reports', 303);
  });

  app.get('/operator/audit', { config: { web: 'operator' } }, async (request, reply) => {
    const accountId = (request.query as Record<string, unknown>).account;
    const [entries, accounts] = await Promise.all([services.audit.list({ limit: AUDIT_PAGE, ...(typeof accountId === 'string' && accountId ? { accountId } : {}) }), services.accounts.listAccounts()]);
    const accountNames = new Map(accounts.map((a) => [a.account_id, a.name]));
    const userEmails = await emailsOf(services, entries.map((e) => e.actor));
    // A name where one is known, the id beside it (in its title) for searching and the CLI.
    const actorOf = (actor: string) => {
      const email = actor.startsWith('user:') ? userEmails.get(actor.slice('user:'.length)) : undefined;
      return email ? html`<span title="${actor}">${email}</span>` : actor;
    };
    const accountOf = (id: string | null) => (id === null ? '' : accountNames.has(id) ? html`<a href="/operator/audit?${new URLSearchParams({ account: id }).toString()}" title="${id}">${accountNames.get(id)!}</a>` : html`<code>${id}</code>`);
    const detailOf = (detail: Record<string, unknown> | null) =>
      detail ? html`<dl class="detail">${Object.entries(detail).map(([key, value]) => html`<dt>${key}</dt><dd>${typeof value === 'string' ? value : JSON.stringify(value)}</dd>`)}</dl>` : '';
    const rows = entries.map((e) => html`<tr><td>${toSecond(e.at)}</td><td>${e.action}</td><td>${actorOf(e.actor)}</td><td>${accountOf(e.account_id)}</td><td>${e.client_id ? html`<code>${e.client_id}</code>` : ''}</td><td>${e.ip ?? ''}</td><td class="detail">${detailOf(e.detail)}</td></tr>`);
    return sendPage(request, reply, 'Audit trail', html`<form method="get" action="/operator/audit" class="inline"><label for="account">Account id</label><input id="account" name="account" value="${typeof accountId === 'string' ? accountId : ''}"><button type="submit">Filter</button></form>
<p>The newest ${AUDIT_PAGE} entries; users and accounts by name (each id in its tooltip), an account's name leading to its entries.</p><div class="scroll" tabindex="0" role="region" aria-label="Audit entries"><table class="audit"><thead><tr><th scope="col">At (UTC)</th><th scope="col">Action</th><th scope="col">Actor</th><th scope="col">Account</th><th scope="col">Client</th><th scope="col">Address</th><th scope="col">Detail</th></tr></thead><tbody>${rows}</tbody></table></div>`);
  });
}

/** The email of each user an actor names (`user:<id>`), where that user still exists. */
async function emailsOf(services: RouteServices, actors: string[]): Promise<Map<string, string>> {
  const ids = [...new Set(actors.filter((a) => a.startsWith('user:')).map((a) => a.slice('user:'.length)))];
  const emails = new Map<string, string>();
  for (const id of ids) {
    const user = await services.users.getUser(id).catch((err: unknown) => {
      if (err instanceof ServiceError && err.code === 'not_found') return undefined;
      throw err;
    });
    if (user) emails.set(id, user.email);
  }
  return emails;
}

/** One plan's form (or an empty one for a new plan), its fields written as `plans set` takes them. */
function planForm(request: FastifyRequest, plan: Plan | undefined): Html {
  const id = plan?.name ?? 'new';
  const field = (name: string, label: string, value: string) =>
    html`<div><label for="${name}-${id}">${label}</label><input id="${name}-${id}" name="${name}" value="${value}" required></div>`;
  return html`<form method="post" action="/operator/plans" class="filters" aria-label="${plan ? `Plan ${plan.name}` : 'New plan'}">${csrfField(request)}
${plan ? html`<input type="hidden" name="name" value="${plan.name}">` : field('name', 'Name', '')}
<label class="check"><input type="checkbox" name="may_submit" value="yes"${plan?.maySubmit ? html` checked` : ''}> may submit events</label>
${field('lookups', 'Lookups', plan ? describeWindow(plan.lookups) : '5/hour')}
${field('submissions', 'Submissions', plan?.submissions ? describeWindow(plan.submissions) : 'none')}
${field('event_reads', 'Event reads', plan ? describeWindow(plan.eventReads) : '60/hour')}
${field('max_clients', 'Clients', plan ? String(plan.maxClients ?? 'unlimited') : '1')}
<div class="buttons"><button type="submit">${plan ? 'Save' : 'Create plan'}</button></div></form>`;
}

/** Every limit of the form, read with the notation of `plans set` (the form always sends them all). */
function planChanges(request: FastifyRequest): PlanChanges {
  const submissions = formText(request, 'submissions').trim();
  const maxClients = formText(request, 'max_clients').trim();
  return {
    maySubmit: formText(request, 'may_submit') === 'yes',
    lookups: parseWindow(formText(request, 'lookups')),
    submissions: submissions === 'none' ? null : parseWindow(submissions),
    eventReads: parseWindow(formText(request, 'event_reads')),
    maxClients: maxClients === 'unlimited' ? null : parseCount(maxClients),
  };
}

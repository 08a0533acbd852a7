import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ALERT_TYPES } from '../../domain/alerts/alerts.ts';
import { ServiceError } from '../../domain/errors.ts';
import { DEFAULT_MIN_SCORE, INTEGRATION_KINDS, MAX_INTEGRATIONS, type CreatedIntegration, type IntegrationView, type RotatedSecret } from '../../domain/alerts/integrations.ts';
import type { Services } from '../../services.ts';
import { formList, formText } from '../form.ts';
import { html, type Html } from '../html.ts';
import { csrfField, sendPage } from '../layout.ts';
import { toMinute } from '../time-text.ts';
import { FieldErrors } from '../field-errors.ts';
import { heldView, redirectShowingOnce, shownNotice } from '../shown-once.ts';
import { accountOf, userOf } from '../web-session.ts';
import { countText } from '../../domain/readable-numbers.ts';

/** What these routes use of the services. */
type RouteServices = Pick<Services, 'integrations' | 'sessions'>;

/** What each alert type means, in the words of docs/api.md §12. */
const ALERT_TYPE_TEXT: Record<(typeof ALERT_TYPES)[number], string> = {
  'lookup.matched': 'a lookup by this account found a match',
  'number.first_seen': "this account's nodes saw a number for the first time",
  'node.silent': 'one of this account’s nodes stopped sending',
};
/** Attempts shown on an integration's page: the newest, as the API's delivery log lists them. */
const LOG_SHOWN = 50;
/** Refusals a person can fix by changing the form: the page is shown again with the reason. */
const FORM_REFUSALS = new Set(['validation_failed', 'limit_reached', 'email_not_configured', 'mail_unavailable']);

/**
 * Settings → Integrations (docs/dashboard.md): where the account's alerts go. Owners create,
 * change, test and delete; members read, the delivery log included. Every change goes through
 * the Integrations service the API's `/api/integrations` routes call (docs/api.md §12), so URL
 * checks (SSRF), email confirmation, limits and the audit trail are the same.
 */
export async function integrationPages(app: FastifyInstance, { services }: { services: RouteServices }) {
  const { integrations } = services;
  const actor = (request: FastifyRequest) => `user:${userOf(request).user_id}`;
  const idOf = (request: FastifyRequest) => (request.params as { id: string }).id;

  app.get('/settings/integrations', { config: { web: 'account' } }, async (request, reply) => listPage(services, request, reply));

  app.post('/settings/integrations', { config: { web: 'owner' } }, async (request, reply) => {
    const kind = formText(request, 'kind');
    const name = formText(request, 'name').trim();
    const body = {
      kind,
      ...(name ? { name } : {}),
      ...(kind === 'email' ? { email: formText(request, 'email').trim() } : { url: formText(request, 'url').trim() }),
      alert_types: formList(request, 'alert_types'),
      ...minScoreField(request),
    };
    let created: CreatedIntegration;
    try {
      created = await integrations.create(accountOf(request), body, actor(request));
    } catch (err) {
      // Back with what was typed, and each reason at its field.
      if (err instanceof ServiceError && FORM_REFUSALS.has(err.code)) return listPage(services, request, reply, html`<p>${err.message}.</p>`, 422, { typed: typedOf(request), errors: new FieldErrors(err, FIELD_LABELS) });
      throw err;
    }
    return redirectShowingOnce(services, request, reply, `/settings/integrations/${created.id}`, { shown: 'integration-created', ...created });
  });

  app.get('/settings/integrations/:id', { config: { web: 'account' } }, async (request, reply) => detailPage(services, request, reply, idOf(request)));

  // Changes the name, where it points, the alerts and the least score; a new email address is
  // confirmed again (docs/api.md §12, "Changing"), which the page after the redirect says once.
  app.post('/settings/integrations/:id', { config: { web: 'owner' } }, async (request, reply) => {
    const accountId = accountOf(request).account_id;
    const before = await integrations.get(accountId, idOf(request));
    let after: IntegrationView;
    try {
      after = await integrations.update(accountId, before.id, changeOf(request, before), actor(request));
    } catch (err) {
      if (err instanceof ServiceError && FORM_REFUSALS.has(err.code)) {
        return detailPage(services, request, reply, before.id, html`<p>${err.message}.</p>`, 422, { typed: typedOf(request), errors: new FieldErrors(err, FIELD_LABELS) });
      }
      throw err;
    }
    if (after.email !== undefined && after.email !== before.email) {
      return redirectShowingOnce(services, request, reply, `/settings/integrations/${after.id}`, { shown: 'address-changed', email: after.email });
    }
    return reply.redirect(`/settings/integrations/${after.id}`, 303);
  });

  // Enables an integration a day of failed deliveries disabled (its held deliveries go out), or disables one.
  for (const [path, enabled] of [['enable', true], ['disable', false]] as const) {
    app.post(`/settings/integrations/:id/${path}`, { config: { web: 'owner' } }, async (request, reply) => {
      await integrations.update(accountOf(request).account_id, idOf(request), { enabled }, actor(request));
      return reply.redirect(`/settings/integrations/${idOf(request)}`, 303);
    });
  }

  app.post('/settings/integrations/:id/secret', { config: { web: 'owner' } }, async (request, reply) => {
    const rotated = await integrations.rotateSecret(accountOf(request).account_id, idOf(request), actor(request));
    return redirectShowingOnce(services, request, reply, `/settings/integrations/${idOf(request)}`, { shown: 'webhook-secret', ...rotated });
  });

  app.post('/settings/integrations/:id/test', { config: { web: 'owner' } }, async (request, reply) => {
    try {
      const { alert_id } = await integrations.test(accountOf(request).account_id, idOf(request));
      return redirectShowingOnce(services, request, reply, `/settings/integrations/${idOf(request)}`, { shown: 'test-sent', alert_id });
    } catch (err) {
      if (err instanceof ServiceError && err.code === 'validation_failed') return detailPage(services, request, reply, idOf(request), refusalOf(err), 422);
      throw err;
    }
  });

  // Sends an alert of the log again; back to the page (303), where the new attempt shows.
  app.post('/settings/integrations/:id/deliveries/:delivery/retry', { config: { web: 'owner' } }, async (request, reply) => {
    const { delivery } = request.params as { delivery: string };
    try {
      await integrations.redeliver(accountOf(request).account_id, idOf(request), delivery, actor(request));
    } catch (err) {
      if (err instanceof ServiceError && err.code === 'validation_failed') return detailPage(services, request, reply, idOf(request), refusalOf(err), 422);
      throw err;
    }
    return reply.redirect(`/settings/integrations/${idOf(request)}`, 303);
  });

  app.get('/settings/integrations/:id/delete', { config: { web: 'owner' } }, async (request, reply) => {
    const integration = await integrations.get(accountOf(request).account_id, idOf(request));
    return sendPage(
      request,
      reply,
      `Delete ${integration.name}?`,
      html`<p>Alerts stop going to ${targetOf(integration)} at once, retries of earlier alerts included. This cannot be undone.</p>
<form method="post" action="/settings/integrations/${integration.id}/delete">${csrfField(request)}<button type="submit" class="danger">Delete integration</button> <a href="/settings/integrations/${integration.id}">Cancel</a></form>`,
    );
  });

  app.post('/settings/integrations/:id/delete', { config: { web: 'owner' } }, async (request, reply) => {
    await integrations.delete(accountOf(request).account_id, idOf(request), actor(request));
    return reply.redirect('/settings/integrations', 303);
  });
}

/**
 * The change form as the service takes it. A Slack URL is never shown (it is a credential), so
 * its field starts empty and, left so, keeps the URL held; a webhook's starts with its URL.
 */
function changeOf(request: FastifyRequest, integration: IntegrationView): Record<string, unknown> {
  const url = formText(request, 'url').trim();
  return {
    name: formText(request, 'name').trim(),
    ...(integration.kind === 'email' ? { email: formText(request, 'email').trim() } : integration.kind === 'slack' && url === '' ? {} : { url }),
    alert_types: formList(request, 'alert_types'),
    ...minScoreField(request),
  };
}

/** What an owner typed into the creation or change form, to show it again when refused. */
interface Typed {
  kind: string;
  name: string;
  url: string;
  email: string;
  alert_types: string[];
  min_score: string;
}

function typedOf(request: FastifyRequest): Typed {
  return {
    kind: formText(request, 'kind'),
    name: formText(request, 'name'),
    url: formText(request, 'url'),
    email: formText(request, 'email'),
    alert_types: formList(request, 'alert_types'),
    min_score: formText(request, 'min_score'),
  };
}

/** How the forms name the fields the service may refuse. */
const FIELD_LABELS: Record<string, string> = {
  kind: 'The kind',
  name: 'The name',
  url: 'The URL',
  email: 'The email address',
  alert_types: 'The alerts',
  min_score: 'The least score',
};

async function listPage(services: RouteServices, request: FastifyRequest, reply: FastifyReply, error?: Html, status = 200, refused?: { typed: Typed; errors: FieldErrors }) {
  const account = accountOf(request);
  const owner = userOf(request).role === 'owner';
  const held = await services.integrations.list(account.account_id);
  const rows = held.map(
    (i) => html`<tr><td><a href="/settings/integrations/${i.id}">${i.name}</a></td><td>${i.kind}</td><td>${targetOf(i)}</td><td>${i.alert_types.join(' ')}</td><td>${statusOf(i)}</td><td><time datetime="${i.created_at}">${toMinute(i.created_at)}</time></td></tr>`,
  );
  const table = held.length === 0
    ? html`<p>No integrations yet: this account’s alerts go nowhere.</p>`
    : html`<div class="scroll" tabindex="0" role="region" aria-label="Integrations"><table><thead><tr><th scope="col">Name</th><th scope="col">Kind</th><th scope="col">Target</th><th scope="col">Alerts</th><th scope="col">State</th><th scope="col">Created (UTC)</th></tr></thead><tbody>${rows}</tbody></table></div>`;
  const full = held.length >= MAX_INTEGRATIONS;
  const limit = html`<p class="limit">${countText(held.length)} of ${countText(MAX_INTEGRATIONS)} integrations.${full ? ' The limit is reached: delete one before creating another.' : ''}</p>`;
  const content = html`${error ? html`<div class="error" role="alert">${error}${refused?.errors.summary() ?? ''}</div>` : ''}
<p>Alerts are signed (webhooks), retried with backoff for a day when a receiver fails, sent once per subject and type within the hour, and logged attempt by attempt on each integration’s page. <a href="/docs#/integrations">The API reference</a> shows how a receiver checks a signature.</p>
${limit}${table}${owner && !full ? createForm(request, refused) : ''}${owner ? '' : html`<p>Only the account’s owners can change its integrations.</p>`}`;
  return sendPage(request, reply, 'Integrations', content, status);
}

/** The creation form; refused, it comes back as typed, each reason at its field. */
function createForm(request: FastifyRequest, refused?: { typed: Typed; errors: FieldErrors }): Html {
  const typed = refused?.typed;
  const errors = refused?.errors ?? new FieldErrors(undefined, FIELD_LABELS);
  const kinds = INTEGRATION_KINDS.map((k) => html`<option value="${k}"${typed?.kind === k ? html` selected` : ''}>${KIND_TEXT[k]}</option>`);
  return html`<h2>New integration</h2>
<form method="post" action="/settings/integrations" class="stack">${csrfField(request)}
<label for="kind">Kind</label><select id="kind" name="kind"${errors.attributes('kind')}>${kinds}</select>${errors.note('kind')}
<label for="name">Name <span class="hint">(optional)</span></label><input id="name" name="name" maxlength="200" placeholder="e.g. PBX fraud desk" value="${typed?.name ?? ''}"${errors.attributes('name')}>${errors.note('name')}
<label for="url">URL <span class="hint">(webhook or Slack: https:, a public host)</span></label><input id="url" name="url" type="url" maxlength="2048" placeholder="https://pbx.example/hooks/tollwatch" value="${typed?.url ?? ''}"${errors.attributes('url')}>${errors.note('url')}
<label for="email">Email address <span class="hint">(email: confirmed by a mailed link before anything is sent)</span></label><input id="email" name="email" type="email" maxlength="254" placeholder="fraud-desk@example.com" value="${typed?.email ?? ''}"${errors.attributes('email')}>${errors.note('email')}
${alertTypeBoxes(typed ? typed.alert_types : [...ALERT_TYPES], errors)}
${minScoreInput(typed?.min_score ?? String(DEFAULT_MIN_SCORE), errors)}
<button type="submit">Create integration</button>
</form>`;
}

const KIND_TEXT: Record<(typeof INTEGRATION_KINDS)[number], string> = {
  webhook: 'Webhook (signed JSON)',
  slack: 'Slack incoming webhook',
  email: 'Email',
};

/** The least score an alert must carry to be sent, as a form field. */
function minScoreInput(value: number | string, errors?: FieldErrors): Html {
  return html`<label for="min_score">Least score <span class="hint">(0 to 100: lookup and first-sighting alerts below it are not sent; one call attempt scores 26, one scan 18)</span></label><input id="min_score" name="min_score" type="number" min="0" max="100" step="1" required value="${value}"${errors?.attributes('min_score') ?? ''}>${errors?.note('min_score') ?? ''}`;
}

/** `min_score` from a form: a number when it reads as one, else the text, for the service to refuse by name. */
function minScoreField(request: FastifyRequest): { min_score?: unknown } {
  const text = formText(request, 'min_score').trim();
  if (text === '') return {};
  return { min_score: /^\d{1,3}$/.test(text) ? Number(text) : text };
}

/** A rotated secret is shown once; the old one signs beside it until the time given. */
function rotatedPage(rotated: RotatedSecret): Html {
  return html`${shownNotice(html`Copy the new signing secret now: it is shown only this once. Until <time datetime="${rotated.previous_secret_expires_at}">${toMinute(rotated.previous_secret_expires_at)}</time> UTC every delivery is signed with the old secret too, so your receiver can switch to the new one any time before then.`)}
<dl class="credentials"><dt>Signing secret</dt><dd><code id="webhook-secret">${rotated.secret}</code> <button type="button" class="copy" data-copy="webhook-secret">Copy</button></dd></dl>`;
}

function alertTypeBoxes(checked: readonly string[], errors?: FieldErrors): Html {
  const boxes = ALERT_TYPES.map(
    (t) => html`<label class="check option"><input type="checkbox" name="alert_types" value="${t}"${checked.includes(t) ? html` checked` : ''}> <span><code>${t}</code>: ${ALERT_TYPE_TEXT[t]}</span></label>`,
  );
  return html`<fieldset${errors?.attributes('alert_types') ?? ''}><legend>Alerts</legend>${boxes}${errors?.note('alert_types') ?? ''}</fieldset>`;
}

/** What a form's redirect left for the integration's page to show once. */
function shownOnce(held: Record<string, unknown> | undefined): Html | '' {
  switch (held?.shown) {
    case 'integration-created':
      return createdPage(held as unknown as CreatedIntegration);
    case 'webhook-secret':
      return rotatedPage(held as unknown as RotatedSecret);
    case 'test-sent':
      return shownNotice(html`A test alert (<code>${String(held.alert_id)}</code>) is on its way; its attempts appear below within seconds.`);
    case 'address-changed':
      return shownNotice(html`A confirmation mail went to <strong>${String(held.email)}</strong>. Nothing is sent to this integration, to the new address or the old one, until its link is followed (within 24 hours); alerts already queued wait for it.`);
    default:
      return '';
  }
}

/** A webhook's secret is shown here once, with a copy button; an email address waits for its link. */
function createdPage(created: CreatedIntegration): Html {
  const next = created.secret
    ? html`${shownNotice(html`Copy the signing secret now: it is shown only this once. Your receiver checks each delivery’s <code>webhook-signature</code> with it (<a href="/docs#/integrations">the API reference</a> shows how).`)}
<dl class="credentials"><dt>Signing secret</dt><dd><code id="webhook-secret">${created.secret}</code> <button type="button" class="copy" data-copy="webhook-secret">Copy</button></dd></dl>`
    : created.status === 'pending_confirmation'
      ? shownNotice(html`A confirmation mail went to <strong>${created.email ?? ''}</strong>. Nothing is sent to the address until its link is followed (within 24 hours).`)
      : shownNotice(html`Alerts go to ${targetOf(created)} from now on.`);
  return next;
}

async function detailPage(services: RouteServices, request: FastifyRequest, reply: FastifyReply, id: string, error?: Html, status = 200, refused?: { typed: Typed; errors: FieldErrors }) {
  const accountId = accountOf(request).account_id;
  const owner = userOf(request).role === 'owner';
  const integration = await services.integrations.get(accountId, id);
  const held = await heldView(services, request);
  const shown = shownOnce(held);
  // After "Send a test alert" the page reads its own log again for a while (dashboard.js), so the attempts appear without a reload.
  const watched = held?.shown === 'test-sent' && typeof held.alert_id === 'string';
  const { attempts } = await services.integrations.attempts(accountId, integration.id, { limit: String(LOG_SHOWN) });
  // A delivery that ended (delivered or given up) may be sent again, by an owner.
  const again = (a: (typeof attempts)[number]) =>
    owner && a.outcome !== 'retrying'
      ? html`<form method="post" action="/settings/integrations/${integration.id}/deliveries/${a.delivery_id}/retry" class="inline">${csrfField(request)}<button type="submit">Send again</button></form>`
      : '';
  const rows = attempts.map(
    (a) => html`<tr data-alert="${a.alert_id}"><td><time datetime="${a.at}">${a.at.slice(0, 19).replace('T', ' ')}</time></td><td>${a.alert_type}</td><td><code>${a.alert_id}</code></td><td>${a.attempt}</td><td>${a.status_code ?? '—'}</td><td>${a.duration_ms} ms</td><td class="outcome-${a.outcome}">${a.outcome}${a.error ? html`: ${a.error}` : ''}</td><td>${again(a)}</td></tr>`,
  );
  const log = attempts.length === 0
    ? html`<p>No deliveries yet.</p>`
    : html`<div class="scroll" tabindex="0" role="region" aria-label="Delivery attempts"><table><thead><tr><th scope="col">At (UTC)</th><th scope="col">Alert</th><th scope="col">Id</th><th scope="col">Attempt</th><th scope="col">Status</th><th scope="col">Took</th><th scope="col">Outcome</th><th scope="col"><span class="visually-hidden">Action</span></th></tr></thead><tbody>${rows}</tbody></table></div>`;
  const changes = owner
    ? html`${changeForm(request, integration, refused)}
<form method="post" action="/settings/integrations/${integration.id}/test" class="inline">${csrfField(request)}${
      integration.status === 'active'
        ? html`<button type="submit">Send a test alert</button>`
        : html`<button type="submit" disabled aria-describedby="test-why">Send a test alert</button> <span id="test-why" class="hint">Enable it first: nothing is sent to a disabled integration.</span>`
    }</form>
${integration.kind === 'webhook' ? html`<form method="post" action="/settings/integrations/${integration.id}/secret" class="inline">${csrfField(request)}<button type="submit">Rotate the signing secret</button></form>` : ''}
${integration.status === 'active' ? html`<form method="post" action="/settings/integrations/${integration.id}/disable" class="inline">${csrfField(request)}<button type="submit">Disable</button></form>` : ''}
<p><a href="/settings/integrations/${integration.id}/delete">Delete…</a></p>`
    : '';
  // Disabled: why, since when, and (for an owner) the way back, above everything else.
  const disabled =
    integration.status === 'disabled'
      ? html`<div class="error" role="alert"><p>Disabled since <time datetime="${integration.disabled_at ?? ''}">${toMinute(integration.disabled_at ?? '')}</time> UTC: ${integration.disabled_reason ?? ''}. Nothing is sent to it, or kept for it, until it is enabled again.</p>${owner ? html`<form method="post" action="/settings/integrations/${integration.id}/enable" class="inline">${csrfField(request)}<button type="submit">Enable again</button></form>` : ''}</div>`
      : '';
  const content = html`${shown}${disabled}${error ? html`<div class="error" role="alert">${error}${refused?.errors.summary() ?? ''}</div>` : ''}
<dl class="credentials"><dt>Kind</dt><dd>${integration.kind}</dd><dt>Target</dt><dd>${targetOf(integration)}</dd><dt>State</dt><dd>${statusOf(integration)}</dd><dt>Alerts</dt><dd>${integration.alert_types.join(' ')}, at a score of ${integration.min_score} or more</dd><dt>Created (UTC)</dt><dd>${toMinute(integration.created_at)}</dd></dl>
${changes}
<h2>Delivery log</h2>
<p>The newest ${LOG_SHOWN} attempts, newest first; the same as <code>GET /api/integrations/${integration.id}/deliveries</code>.</p>
<div id="delivery-log"${watched ? html` data-watch="${String(held.alert_id)}"` : ''}>${log}</div><p id="delivery-log-status" class="hint" role="status"></p>
<p><a href="/settings/integrations">Back to the integrations</a></p>`;
  return sendPage(request, reply, integration.name, content, status);
}

/** The change form, filled with what is held; refused, with what was typed, each reason at its field. */
function changeForm(request: FastifyRequest, integration: IntegrationView, refused?: { typed: Typed; errors: FieldErrors }): Html {
  const typed = refused?.typed;
  const errors = refused?.errors ?? new FieldErrors(undefined, FIELD_LABELS);
  const target =
    integration.kind === 'email'
      ? html`<label for="email">Email address <span class="hint">(a new address is confirmed by a mailed link first; nothing is sent, to it or to the old one, until then)</span></label><input id="email" name="email" type="email" required maxlength="254" value="${typed?.email ?? integration.email ?? ''}"${errors.attributes('email')}>${errors.note('email')}`
      : integration.kind === 'slack'
        ? html`<label for="url">New URL <span class="hint">(empty keeps the one held, which is not shown: a Slack URL is a credential)</span></label><input id="url" name="url" type="url" maxlength="2048" placeholder="${integration.url ?? ''}" value="${typed?.url ?? ''}"${errors.attributes('url')}>${errors.note('url')}`
        : html`<label for="url">URL <span class="hint">(https:, a public host; checked again when changed)</span></label><input id="url" name="url" type="url" required maxlength="2048" value="${typed?.url ?? integration.url ?? ''}"${errors.attributes('url')}>${errors.note('url')}`;
  return html`<h2>Change</h2>
<form method="post" action="/settings/integrations/${integration.id}" class="stack">${csrfField(request)}
<label for="name">Name</label><input id="name" name="name" required maxlength="200" value="${typed?.name ?? integration.name}"${errors.attributes('name')}>${errors.note('name')}
${target}
${alertTypeBoxes(typed ? typed.alert_types : integration.alert_types, errors)}
${minScoreInput(typed?.min_score ?? integration.min_score, errors)}
<button type="submit">Save</button>
</form>`;
}

function targetOf(integration: IntegrationView): string {
  return integration.email ?? integration.url ?? '';
}

function statusOf(integration: IntegrationView): string {
  return integration.status === 'pending_confirmation' ? 'awaiting confirmation' : integration.status;
}

/** The service's refusal, and each field it names, for the person at the form. */
function refusalOf(err: ServiceError): Html {
  return html`<p>${err.message}.</p>${new FieldErrors(err, FIELD_LABELS).summary()}`;
}

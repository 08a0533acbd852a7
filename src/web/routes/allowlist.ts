import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ALLOWLIST_KINDS, MAX_ALLOWLIST_ENTRIES, MAX_NOTE_LENGTH, OPERATOR_LIST } from '../../domain/allowlists/allowlists.ts';
import { ServiceError } from '../../domain/errors.ts';
import type { Services } from '../../services.ts';
import { FieldErrors } from '../field-errors.ts';
import { formText } from '../form.ts';
import { html } from '../html.ts';
import { csrfField, sendPage } from '../layout.ts';
import { toMinute } from '../time-text.ts';
import { accountOf, userOf } from '../web-session.ts';
import { countText } from '../../domain/readable-numbers.ts';

/** What these routes use of the services. */
type RouteServices = Pick<Services, 'allowlists'>;

const KIND_LABELS: Record<(typeof ALLOWLIST_KINDS)[number], string> = {
  phone_number: 'Phone number',
  number_prefix: 'Number prefix',
  ip_address: 'IP address',
  ip_range: 'IP range (CIDR)',
};

const LABELS = { kind: 'The kind', value: 'The value', note: 'The note', body: 'The form' };

/** Whose list a page shows, and what it says of its effect. */
interface ListPlace {
  path: string;
  title: string;
  owner(request: FastifyRequest): string;
  /** Who may change it: an account's owners, or the operator. */
  mayChange(request: FastifyRequest): boolean;
  effect: string;
}

const ACCOUNT_LIST: ListPlace = {
  path: '/settings/allowlist',
  title: 'Allowlist',
  owner: (request) => accountOf(request).account_id,
  mayChange: (request) => userOf(request).role === 'owner',
  effect:
    'Numbers and addresses that are yours and never to be blocked. Lookups by this account’s clients still show what was seen, and say it is allowlisted; its call guard lets such calls through; no alert is raised about them; and this account’s feeds leave them out.',
};

const OPERATOR_PAGE: ListPlace = {
  path: '/operator/allowlist',
  title: 'Operator allowlist',
  owner: () => OPERATOR_LIST,
  mayChange: () => true,
  effect:
    'Numbers and addresses never published: every feed, the TAXII collections (a live indicator is revoked) and the DNS zones leave them out. Lookups still show what was seen.',
};

/**
 * Settings → Allowlist, and the operator's allowlist (docs/dashboard.md): the same service the
 * API and the CLI call, so normalisation, limits, audit and the notices to every instance are
 * theirs.
 */
export async function allowlistPages(app: FastifyInstance, { services }: { services: RouteServices }) {
  for (const [place, web] of [
    [ACCOUNT_LIST, { read: 'account', change: 'owner' }],
    [OPERATOR_PAGE, { read: 'operator', change: 'operator' }],
  ] as const) {
    const actor = (request: FastifyRequest) => `user:${userOf(request).user_id}`;
    app.get(place.path, { config: { web: web.read } }, async (request, reply) => listPage(services, place, request, reply));
    app.post(place.path, { config: { web: web.change } }, async (request, reply) => {
      try {
        const note = formText(request, 'note');
        await services.allowlists.add(place.owner(request), { kind: formText(request, 'kind'), value: formText(request, 'value'), ...(note ? { note } : {}) }, actor(request));
      } catch (err) {
        if (err instanceof ServiceError && (err.code === 'validation_failed' || err.code === 'limit_reached')) return listPage(services, place, request, reply, err, 422);
        throw err;
      }
      return reply.redirect(place.path, 303);
    });
    app.post(`${place.path}/:id/remove`, { config: { web: web.change } }, async (request, reply) => {
      await services.allowlists.remove(place.owner(request), (request.params as { id: string }).id, actor(request));
      return reply.redirect(place.path, 303);
    });
  }
}

async function listPage(services: RouteServices, place: ListPlace, request: FastifyRequest, reply: FastifyReply, error?: ServiceError, status = 200) {
  const entries = await services.allowlists.list(place.owner(request));
  const changes = place.mayChange(request);
  const errors = new FieldErrors(error, LABELS);
  const rows = entries.map(
    (e) => html`<tr><td>${KIND_LABELS[e.kind]}</td><td><code>${e.value}</code></td><td>${e.note ?? ''}</td><td><time datetime="${e.added_at}">${toMinute(e.added_at)}</time> by <code>${e.added_by}</code></td>
${changes ? html`<td class="actions"><form method="post" action="${place.path}/${e.id}/remove" class="inline">${csrfField(request)}<button type="submit" class="danger" aria-label="Remove ${e.value}">Remove</button></form></td>` : ''}</tr>`,
  );
  const table =
    entries.length === 0
      ? html`<p>Nothing is allowlisted.</p>`
      : html`<div class="scroll" tabindex="0" role="region" aria-label="Allowlist entries"><table><thead><tr><th scope="col">Kind</th><th scope="col">Value</th><th scope="col">Note</th><th scope="col">Added (UTC)</th>${changes ? html`<th scope="col" class="actions">Actions</th>` : ''}</tr></thead><tbody>${rows}</tbody></table></div>`;
  const kind = formText(request, 'kind');
  const options = ALLOWLIST_KINDS.map((k) => html`<option value="${k}"${k === kind ? html` selected` : ''}>${KIND_LABELS[k]}</option>`);
  const form = changes
    ? html`<h2>Add an entry</h2>
<form method="post" action="${place.path}" class="stack">${csrfField(request)}
<label for="kind">Kind</label><select id="kind" name="kind"${errors.attributes('kind')}>${options}</select>${errors.note('kind')}
<label for="value">Number, prefix, address or range</label><input id="value" name="value" required maxlength="512" value="${error ? formText(request, 'value') : ''}" placeholder="e.g. +44 20 7946 0958, 198.51.100.0/24"${errors.attributes('value')}>${errors.note('value')}
<label for="note">Note (optional)</label><input id="note" name="note" maxlength="${String(MAX_NOTE_LENGTH)}" value="${error ? formText(request, 'note') : ''}"${errors.attributes('note')}>${errors.note('note')}
<button type="submit">Add to the allowlist</button>
</form>`
    : html`<p>Only the account’s owners can change its allowlist.</p>`;
  const alert = error ? html`<div class="error" role="alert"><p>${error.message}</p>${errors.summary()}</div>` : '';
  const limit = html`<p class="limit">${countText(entries.length)} of ${countText(MAX_ALLOWLIST_ENTRIES)} entries.</p>`;
  return sendPage(request, reply, place.title, html`${alert}<p>${place.effect}</p>${limit}${table}${form}`, status);
}

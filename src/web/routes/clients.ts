import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { IssuedCredentials } from '../../domain/accounts/accounts.ts';
import { CLIENT_USE_FLUSH_MS } from '../../domain/accounts/client-activity.ts';
import { ServiceError } from '../../domain/errors.ts';
import { defaultPermissions, PERMISSIONS } from '../../domain/accounts/permissions.ts';
import type { Services } from '../../services.ts';
import { formList, formText } from '../form.ts';
import { toMinute } from '../time-text.ts';
import { html, type Html } from '../html.ts';
import { csrfField, sendPage } from '../layout.ts';
import { heldView, redirectShowingOnce, shownNotice } from '../shown-once.ts';
import { accountOf, userOf } from '../web-session.ts';
import { countText } from '../../domain/readable-numbers.ts';

/** What these routes use of the services. */
type RouteServices = Pick<Services, 'accounts' | 'plans' | 'sessions'>;

/**
 * Settings → API clients (docs/dashboard.md): owners create, reset and delete; members read.
 * Every change goes through AccountsService, as the CLI's `clients` commands do, so plan limits,
 * revocation and its notices are the same; the dashboard only adds that the client must be
 * the signed-in user's account's (`clientOf`).
 */
export async function clientRoutes(app: FastifyInstance, { services }: { services: RouteServices }) {
  const actor = (request: FastifyRequest) => `user:${userOf(request).user_id}`;

  app.get('/settings/clients', { config: { web: 'account' } }, async (request, reply) => listPage(services, request, reply));

  app.post('/settings/clients', { config: { web: 'owner' } }, async (request, reply) => {
    const account = accountOf(request);
    let issued: IssuedCredentials;
    try {
      issued = await services.accounts.createClient({ accountId: account.account_id, name: formText(request, 'name'), permissions: formList(request, 'permissions') }, actor(request));
    } catch (err) {
      if (err instanceof ServiceError && (err.code === 'validation_failed' || err.code === 'limit_reached')) return listPage(services, request, reply, err.message, 422);
      throw err;
    }
    return redirectShowingOnce(services, request, reply, '/settings/clients', { shown: 'client-secret', name: issued.name, client_id: issued.client_id, client_secret: issued.client_secret });
  });

  app.get('/settings/clients/:id/reset-secret', { config: { web: 'owner' } }, async (request, reply) => {
    const client = await services.accounts.clientOf(accountOf(request).account_id, (request.params as { id: string }).id);
    return confirmPage(request, reply, `Reset the secret of ${client.name}?`, html`<p>A new secret replaces the old one at once. The old secret, and every token issued with it, stop working now: update every node and program that uses <code>${client.client_id}</code>.</p>`, `/settings/clients/${client.client_id}/reset-secret`, 'Reset secret');
  });

  app.post('/settings/clients/:id/reset-secret', { config: { web: 'owner' } }, async (request, reply) => {
    const client = await services.accounts.clientOf(accountOf(request).account_id, (request.params as { id: string }).id);
    const reset = await services.accounts.resetSecret(client.client_id, actor(request));
    return redirectShowingOnce(services, request, reply, '/settings/clients', { shown: 'client-secret', name: client.name, client_id: reset.client_id, client_secret: reset.client_secret });
  });

  app.get('/settings/clients/:id/delete', { config: { web: 'owner' } }, async (request, reply) => {
    const client = await services.accounts.clientOf(accountOf(request).account_id, (request.params as { id: string }).id);
    return confirmPage(request, reply, `Delete ${client.name}?`, html`<p>The client <code>${client.client_id}</code> and every token issued to it stop working at once. This cannot be undone.</p>`, `/settings/clients/${client.client_id}/delete`, 'Delete client');
  });

  app.post('/settings/clients/:id/delete', { config: { web: 'owner' } }, async (request, reply) => {
    const client = await services.accounts.clientOf(accountOf(request).account_id, (request.params as { id: string }).id);
    await services.accounts.deleteClient(client.client_id, actor(request));
    return reply.redirect('/settings/clients', 303);
  });
}

async function listPage(services: RouteServices, request: FastifyRequest, reply: FastifyReply, error?: string, status = 200) {
  const account = accountOf(request);
  const owner = userOf(request).role === 'owner';
  const [clients, plan, held] = await Promise.all([services.accounts.listClients(account.account_id), services.plans.find(account.plan), heldView(services, request)]);
  const shown = held?.shown === 'client-secret' ? secretShown(String(held.name), String(held.client_id), String(held.client_secret)) : '';
  const max = plan?.maxClients ?? null;
  const full = max !== null && clients.length >= max;
  const rows = clients.map(
    (c) => html`<tr><td data-label="Name">${c.name}</td><td data-label="Client id" class="wide"><code>${c.client_id}</code></td><td data-label="Permissions" class="wide">${c.permissions.map((p, i) => html`${i > 0 ? ' ' : ''}<code class="token">${p}</code>`)}</td><td data-label="Created (UTC)"><time datetime="${c.created_at}">${toMinute(c.created_at)}</time></td><td data-label="Last token (UTC)" class="wide">${lastUse(c.last_used_at, c.last_token_address)}</td><td data-label="Last API call (UTC)" class="wide">${lastUse(c.last_call_at, c.last_call_address)}</td>
${owner ? html`<td class="actions wide" data-label="Actions"><a href="/settings/clients/${c.client_id}/reset-secret">Reset secret…</a> <a href="/settings/clients/${c.client_id}/delete">Delete…</a></td>` : ''}</tr>`,
  );
  const table = clients.length === 0
    ? html`<p>No API clients yet.</p>`
    : html`<div class="scroll" tabindex="0" role="region" aria-label="API clients"><table class="cards"><thead><tr><th scope="col">Name</th><th scope="col">Client id</th><th scope="col">Permissions</th><th scope="col">Created (UTC)</th><th scope="col">Last token (UTC)</th><th scope="col">Last API call (UTC)</th>${owner ? html`<th scope="col" class="actions">Actions</th>` : ''}</tr></thead><tbody>${rows}</tbody></table></div>`;
  const lag = clients.length === 0 ? '' : html`<p>Last token and last API call are written every ${CLIENT_USE_FLUSH_MS / 1000} seconds, so they may be that much behind.</p>`;
  const limit = html`<p class="limit">${countText(clients.length)} of ${max === null ? 'unlimited' : countText(max)} clients on the ${account.plan} plan.${full ? ' The limit is reached: delete a client before creating another.' : ''}</p>`;
  return sendPage(request, reply, 'API clients', html`${shown}${error ? html`<p class="error" role="alert">${error}</p>` : ''}${limit}${table}${lag}${owner && !full ? createForm(request, plan?.maySubmit ?? false) : ''}${owner ? '' : html`<p>Only the account’s owners can change its clients.</p>`}`, status);
}

/** When a client was last used and from which address (the one its request came from); "never" if it was not. */
function lastUse(at: string | null, address: string | null): Html | string {
  if (!at) return 'never';
  return html`<time datetime="${at}">${toMinute(at)}</time>${address ? html` from <code>${address}</code>` : ''}`;
}

function createForm(request: FastifyRequest, maySubmit: boolean): Html {
  const defaults = defaultPermissions(maySubmit);
  const boxes = PERMISSIONS.map(
    (p) => html`<label class="check"><input type="checkbox" name="permissions" value="${p}"${defaults.includes(p) ? html` checked` : ''}> ${p}</label>`,
  );
  return html`<h2>New client</h2>
<form method="post" action="/settings/clients" class="stack">${csrfField(request)}
<label for="name">Name</label><input id="name" name="name" required maxlength="200" placeholder="e.g. node-1">
<fieldset><legend>Permissions</legend>${boxes}</fieldset>
<button type="submit">Create client</button>
</form>`;
}

/** Credentials shown once, each with a copy button (dashboard.js); never shown again. */
function secretShown(name: string, clientId: string, secret: string): Html {
  return html`${shownNotice(html`Copy the secret of <strong>${name}</strong> now: it is shown only this once, and only its hash is kept.`)}
<dl class="credentials">
<dt>client_id</dt><dd><code id="client-id">${clientId}</code> <button type="button" class="copy" data-copy="client-id">Copy</button></dd>
<dt>client_secret</dt><dd><code id="client-secret">${secret}</code> <button type="button" class="copy" data-copy="client-secret">Copy</button></dd>
</dl>`;
}

function confirmPage(request: FastifyRequest, reply: FastifyReply, title: string, explanation: Html, action: string, button: string) {
  return sendPage(request, reply, title, html`${explanation}<form method="post" action="${action}">${csrfField(request)}<button type="submit" class="danger">${button}</button> <a href="/settings/clients">Cancel</a></form>`);
}

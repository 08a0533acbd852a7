import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ServiceError } from '../../domain/errors.ts';
import type { PeerView } from '../../domain/federation/peer-records.ts';
import { POLL_SECONDS_DEFAULT, POLL_SECONDS_MAX, POLL_SECONDS_MIN } from '../../domain/federation/peer-settings.ts';
import type { Services } from '../../services.ts';
import { formText } from '../form.ts';
import { html } from '../html.ts';
import { csrfField, sendPage } from '../layout.ts';
import { toSecond } from '../time-text.ts';
import { userOf } from '../web-session.ts';

/** What these routes use of the services. */
type RouteServices = Pick<Services, 'peers'>;

/**
 * The operator's peers (docs/federation.md): their status, adding one (asked as a TAXII 2.1
 * server first), removing, enabling, disabling and polling soon, through the service the CLI's
 * `peers` commands call.
 */
export async function operatorPeersRoutes(app: FastifyInstance, { services }: { services: RouteServices }) {
  const actor = (request: FastifyRequest) => `user:${userOf(request).user_id}`;

  app.get('/operator/peers', { config: { web: 'operator' } }, async (request, reply) => {
    const peers = await services.peers.list();
    const action = (p: PeerView, verb: string, label: string) =>
      html`<form method="post" action="/operator/peers/${p.id}/${verb}" class="inline" aria-label="${label} peer ${p.name}">${csrfField(request)}<button type="submit">${label}</button></form>`;
    const rows = peers.map((p) => {
      const s = p.status;
      return html`<tr><td>${p.name}</td><td><code>${p.apiRoot}</code><br>${p.collections.join(', ')}</td><td>${p.trust}</td><td>${p.enabled ? `every ${p.pollSeconds} s` : 'disabled'}${s.polling ? ' (polling now)' : ''}</td>
<td>${s.lastSuccessAt ? toSecond(s.lastSuccessAt) : 'never'}</td><td>${s.objectsRead} / ${s.objectsAccepted} / ${s.objectsSkipped} / ${s.objectsRefused}</td>
<td>${s.lastError ? html`${s.lastErrorAt ? toSecond(s.lastErrorAt) : ''}: ${s.lastError}${s.failures > 0 ? html` (${s.failures} failed in a row)` : ''}` : 'none'}</td>
<td>${p.enabled ? action(p, 'disable', 'Disable') : action(p, 'enable', 'Enable')}${p.enabled ? action(p, 'poll', 'Poll soon') : ''}${action(p, 'remove', 'Remove')}</td></tr>`;
    });
    return sendPage(
      request,
      reply,
      'Peers',
      html`<p>Peers are other TAXII 2.1 servers whose indicators this one reads (docs/federation.md). The same list is <code>tollwatch peers list</code>.</p>
<h2>Peers (${peers.length})</h2>${
        peers.length === 0
          ? html`<p>No peers.</p>`
          : html`<div class="scroll" tabindex="0" role="region" aria-label="Peers"><table><thead><tr><th scope="col">Name</th><th scope="col">API root and collections</th><th scope="col">Trust</th><th scope="col">Poll</th><th scope="col">Last success (UTC)</th><th scope="col">Read / accepted / skipped / refused</th><th scope="col">Last error</th><th scope="col">Actions</th></tr></thead><tbody>${rows}</tbody></table></div>`
      }
<h2>Add a peer</h2>
<form method="post" action="/operator/peers" class="filters" aria-label="Add a peer">${csrfField(request)}
<div><label for="peer-name">Name</label><input id="peer-name" name="name" required maxlength="64"></div>
<div><label for="peer-root">API root URL</label><input id="peer-root" name="api_root" type="url" required maxlength="2048"></div>
<div><label for="peer-collections">Collections (comma-separated; empty: every readable one)</label><input id="peer-collections" name="collections"></div>
<div><label for="peer-auth">Authentication</label><select id="peer-auth" name="auth"><option value="none">none</option><option value="basic" selected>Basic</option><option value="bearer">bearer token</option></select></div>
<div><label for="peer-username">Username (Basic; a Tollwatch peer: the client id)</label><input id="peer-username" name="username" autocomplete="off"></div>
<div><label for="peer-credential">Password or token (a Tollwatch peer: the client secret)</label><input id="peer-credential" name="credential" type="password" autocomplete="new-password"></div>
<div><label for="peer-trust">Trust (0–1)</label><input id="peer-trust" name="trust" value="0.5" required></div>
<div><label for="peer-poll">Poll every (seconds, ${POLL_SECONDS_MIN}–${POLL_SECONDS_MAX})</label><input id="peer-poll" name="poll_seconds" value="${POLL_SECONDS_DEFAULT}" required></div>
<label class="check"><input type="checkbox" name="republish" value="yes"> what it says may be published again (TLP permitting)</label>
<div class="buttons"><button type="submit">Add peer</button></div></form>`,
    );
  });

  app.post('/operator/peers', { config: { web: 'operator' } }, async (request, reply) => {
    await services.peers.add(
      {
        name: formText(request, 'name'),
        apiRoot: formText(request, 'api_root'),
        collections: formText(request, 'collections'),
        auth: formText(request, 'auth') || 'none',
        username: formText(request, 'username'),
        credential: formText(request, 'credential'),
        trust: formText(request, 'trust'),
        pollSeconds: formText(request, 'poll_seconds'),
        republish: formText(request, 'republish') === 'yes',
      },
      actor(request),
    );
    return reply.redirect('/operator/peers', 303);
  });

  app.post('/operator/peers/:id/:verb', { config: { web: 'operator' } }, async (request, reply) => {
    const { id, verb } = request.params as { id: string; verb: string };
    if (verb === 'enable' || verb === 'disable') await services.peers.setEnabled(id, verb === 'enable', actor(request));
    else if (verb === 'remove') await services.peers.remove(id, actor(request));
    else if (verb === 'poll') await services.peers.pollSoon(id);
    else throw new ServiceError('not_found', 'no such action');
    return reply.redirect('/operator/peers', 303);
  });
}

import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { CountedValue, NodeSummary } from '../../domain/accounts/account-activity.ts';
import { ServiceError } from '../../domain/errors.ts';
import type { Services } from '../../services.ts';
import { toSecond } from '../time-text.ts';
import { countText } from '../../domain/readable-numbers.ts';
import { html } from '../html.ts';
import { formText } from '../form.ts';
import { csrfField, sendPage } from '../layout.ts';
import { WebRefusal } from '../web-refusal.ts';
import { accountOf, userOf } from '../web-session.ts';

/** What these routes use of the services. */
type RouteServices = Pick<Services, 'activity' | 'config'>;

/** Nodes (docs/dashboard.md): one row per `created_by_node_id` of the account's events. */
export async function nodeRoutes(app: FastifyInstance, { services }: { services: RouteServices }) {
  const silentAfter = services.config.dashboard.nodeSilentAfterSeconds;
  // An owner names a node (an empty name forgets it): its pages then show the name, not the UUID.
  app.post('/nodes/:id/name', { config: { web: 'owner' } }, async (request, reply) => {
    try {
      await services.activity.nameNode(accountOf(request), (request.params as { id: string }).id, formText(request, 'name'), `user:${userOf(request).user_id}`);
    } catch (err) {
      if (err instanceof ServiceError && err.code === 'validation_failed') throw new WebRefusal(422, 'A node’s name is 1 to 200 printable characters.');
      throw err;
    }
    return reply.redirect('/nodes', 303);
  });

  app.get('/nodes', { config: { web: 'account' } }, async (request, reply) => {
    const owner = userOf(request).role === 'owner';
    const nodes = await services.activity.nodes(accountOf(request), silentAfter);
    const counts = (values: CountedValue[]) => values.map((v) => `${v.value} ${countText(v.count)}`).join(', ');
    const rows = nodes.map(
      (n) => html`<tr${n.silent ? html` class="silent"` : ''}><td data-label="Node" class="wide">${n.name ? html`<strong>${n.name}</strong><br>` : ''}<a href="/events?node_id=${n.node_id}"><code>${n.node_id}</code></a>${n.silent ? html` <span class="badge">silent</span>` : ''}${owner ? nameForm(request, n) : ''}</td><td data-label="First event (UTC)">${toSecond(n.first_event)}</td><td data-label="Last event (UTC)">${toSecond(n.last_event)}</td><td data-label="Events">${countText(n.events)}</td><td data-label="Methods" class="wide">${counts(n.methods)}</td><td data-label="Transports" class="wide">${counts(n.transports)}</td></tr>`,
    );
    const content = nodes.length === 0
      ? html`<p>No node has submitted events to this account yet.</p>`
      : html`<p>A node is marked <span class="badge">silent</span> when it has sent nothing for ${Math.round(silentAfter / 60)} minutes.</p>
<div class="scroll" tabindex="0" role="region" aria-label="Nodes"><table class="cards"><thead><tr><th scope="col">Node</th><th scope="col">First event (UTC)</th><th scope="col">Last event (UTC)</th><th scope="col">Events</th><th scope="col">Methods</th><th scope="col">Transports</th></tr></thead><tbody>${rows}</tbody></table></div>`;
    return sendPage(request, reply, 'Nodes', content);
  });
}

/** An owner's field to name a node, under its id. */
function nameForm(request: FastifyRequest, node: NodeSummary) {
  return html`<form method="post" action="/nodes/${node.node_id}/name" class="inline node-name">${csrfField(request)}<label class="visually-hidden" for="name-${node.node_id}">Name of ${node.node_id}</label><input id="name-${node.node_id}" name="name" maxlength="200" value="${node.name ?? ''}" placeholder="a name, e.g. Stockholm PoP"> <button type="submit">Name</button></form>`;
}

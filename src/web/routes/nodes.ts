import type { FastifyInstance } from 'fastify';
import type { CountedValue } from '../../domain/account-activity.ts';
import type { Services } from '../../services.ts';
import { toSecond } from '../time-text.ts';
import { html } from '../html.ts';
import { sendPage } from '../layout.ts';
import { accountOf } from '../web-session.ts';

/** What these routes use of the services. */
type RouteServices = Pick<Services, 'activity' | 'config'>;

/** Nodes (docs/dashboard.md): one row per `created_by_node_id` of the account's events. */
export async function nodeRoutes(app: FastifyInstance, { services }: { services: RouteServices }) {
  const silentAfter = services.config.dashboard.nodeSilentAfterSeconds;
  app.get('/nodes', { config: { web: 'account' } }, async (request, reply) => {
    const nodes = await services.activity.nodes(accountOf(request), silentAfter);
    const counts = (values: CountedValue[]) => values.map((v) => `${v.value} ${v.count}`).join(', ');
    const rows = nodes.map(
      (n) => html`<tr${n.silent ? html` class="silent"` : ''}><td><a href="/events?node_id=${n.node_id}"><code>${n.node_id}</code></a>${n.silent ? html` <span class="badge">silent</span>` : ''}</td><td>${toSecond(n.first_event)}</td><td>${toSecond(n.last_event)}</td><td>${n.events}</td><td>${counts(n.methods)}</td><td>${counts(n.transports)}</td></tr>`,
    );
    const content = nodes.length === 0
      ? html`<p>No node has submitted events to this account yet.</p>`
      : html`<p>A node is marked <span class="badge">silent</span> when it has sent nothing for ${Math.round(silentAfter / 60)} minutes.</p>
<div class="scroll"><table><thead><tr><th scope="col">Node</th><th scope="col">First event (UTC)</th><th scope="col">Last event (UTC)</th><th scope="col">Events</th><th scope="col">Methods</th><th scope="col">Transports</th></tr></thead><tbody>${rows}</tbody></table></div>`;
    return sendPage(request, reply, 'Nodes', content);
  });
}

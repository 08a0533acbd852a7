import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { CONFIRM_PATH } from '../domain/alerts/integrations.ts';
import type { Services } from '../services.ts';
import { html, type Html } from './html.ts';
import { sendPage } from './layout.ts';
import { DASHBOARD_CSP } from './web-scope.ts';

/**
 * The link of an email integration's confirmation mail (docs/api.md §12). GET only shows a
 * button, and the POST it sends confirms: mail scanners and link previews fetch every link in
 * a mail, and must not confirm an address for its owner. Outside the dashboard's scope: the
 * link is opened by whoever reads the mail, signed in or not.
 */
export async function integrationConfirmPages(app: FastifyInstance, { services }: { services: Pick<Services, 'integrations'> }) {
  // The button's form posts an empty urlencoded body; nothing in it is read.
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: 1024 }, async () => undefined);
  app.get<{ Params: { token: string } }>(`${CONFIRM_PATH}/:token`, { schema: { hide: true } }, async (request, reply) =>
    page(request, reply, 200, 'Confirm this address', html`<form method="post"><p>Receive this account’s Tollwatch alerts at this address?</p><button type="submit">Confirm</button></form>`),
  );
  app.post<{ Params: { token: string } }>(`${CONFIRM_PATH}/:token`, { schema: { hide: true } }, async (request, reply) =>
    (await services.integrations.confirm(request.params.token))
      ? page(request, reply, 200, 'Address confirmed', html`<p>Alerts will be sent to this address.</p>`)
      : page(request, reply, 404, 'Link not valid', html`<p>This link is unknown, already used or expired (links work for 24 hours). Create the integration again for a new one.</p>`),
  );
}

/** A page in the dashboard's layout and under its policy, for whoever follows the mail's link. */
function page(request: FastifyRequest, reply: FastifyReply, status: number, title: string, body: Html): FastifyReply {
  reply.header('cache-control', 'no-store').header('content-security-policy', DASHBOARD_CSP);
  return sendPage(request, reply, title, body, status);
}

import type { FastifyInstance, FastifyReply } from 'fastify';
import { CONFIRM_PATH } from '../domain/integrations.ts';
import type { Services } from '../services.ts';
import { html, type Html } from './html.ts';

/**
 * The link of an email integration's confirmation mail (docs/api.md §12). GET only shows a
 * button, and the POST it sends confirms: mail scanners and link previews fetch every link in
 * a mail, and must not confirm an address for its owner. Outside the dashboard's scope: the
 * link is opened by whoever reads the mail, signed in or not.
 */
export async function integrationConfirmPages(app: FastifyInstance, { services }: { services: Pick<Services, 'integrations'> }) {
  // The button's form posts an empty urlencoded body; nothing in it is read.
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: 1024 }, async () => undefined);
  app.get<{ Params: { token: string } }>(`${CONFIRM_PATH}/:token`, { schema: { hide: true } }, async (_request, reply) =>
    page(reply, 200, 'Confirm this address', html`<form method="post"><p>Receive this account’s Tollwatch alerts at this address?</p><button type="submit">Confirm</button></form>`),
  );
  app.post<{ Params: { token: string } }>(`${CONFIRM_PATH}/:token`, { schema: { hide: true } }, async (request, reply) =>
    (await services.integrations.confirm(request.params.token))
      ? page(reply, 200, 'Address confirmed', html`<p>Alerts will be sent to this address.</p>`)
      : page(reply, 404, 'Link not valid', html`<p>This link is unknown, already used or expired (links work for 24 hours). Create the integration again for a new one.</p>`),
  );
}

function page(reply: FastifyReply, status: number, title: string, body: Html): FastifyReply {
  return reply
    .code(status)
    .header('cache-control', 'no-store')
    .type('text/html; charset=utf-8')
    .send(html`<!doctype html>\n<html lang="en">\n<head><meta charset="utf-8"><title>${title}</title></head>\n<body>\n<h1>${title}</h1>\n${body}\n</body>\n</html>\n`.text);
}

import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { COLLECTED_METHODS, TRANSPORT_TYPES } from '../../domain/event-fields.ts';
import { QUERY_PARAMETERS, type EventPage } from '../../domain/event-query.ts';
import { ServiceError } from '../../domain/errors.ts';
import type { Services } from '../../services.ts';
import { csvLines, exportedEvents, ndjsonLines } from '../event-export.ts';
import { toSecond } from '../time-text.ts';
import { html, type Html } from '../html.ts';
import { sendPage } from '../layout.ts';
import { addressLink, numberLink } from '../subject-links.ts';
import { accountOf } from '../web-session.ts';

/** What these routes use of the services. */
type RouteServices = Pick<Services, 'eventQuery'>;

/** The filters the events page offers: those of `GET /api/events` (docs/api.md §8) but paging. */
const FILTERS = QUERY_PARAMETERS.filter((p) => p !== 'limit' && p !== 'cursor');
const PAGE_SIZE = 50;

/**
 * Events (docs/dashboard.md): the account's own events through the domain's event query, the
 * same filters and cursor as `GET /api/events`; one event whole; the filtered set exported.
 * Not counted against the plan's event reads: a person reads pages here, not a program.
 */
export async function eventRoutes(app: FastifyInstance, { services }: { services: RouteServices }) {
  app.get('/events', { config: { web: 'account' } }, async (request, reply) => {
    const account = accountOf(request);
    const filters = filtersOf(request);
    const cursor = textParam(request, 'cursor');
    let page: EventPage | undefined;
    let errors: Html | undefined;
    try {
      page = await services.eventQuery.list(account, { ...filters, limit: PAGE_SIZE, ...(cursor ? { cursor } : {}) });
    } catch (err) {
      if (!(err instanceof ServiceError) || err.code !== 'validation_failed') throw err;
      errors = html`<ul class="error" role="alert">${(err.errors ?? []).map((e) => html`<li>${e.field}: ${e.message}</li>`)}</ul>`;
    }
    const query = new URLSearchParams(filters).toString();
    const rows = (page?.data ?? []).map(
      (e) => html`<tr><td><a href="/events/${e.event_uuid}"><time datetime="${e.event_time}">${toSecond(e.event_time)}</time></a></td><td>${e.sip_method}</td><td>${e.transport_type}</td><td>${addressLink(e.source_ip)}</td><td>${numberLink(e.called_number)}</td><td>${e.sip_user_agent}</td><td><code>${e.created_by_node_id.slice(0, 8)}</code></td></tr>`,
    );
    const next = page?.next_cursor ? html`<p><a rel="next" href="/events?${new URLSearchParams({ ...filters, cursor: page.next_cursor }).toString()}">Older events →</a></p>` : '';
    const content = html`${filterForm(filters)}${errors}
<p class="exports">Export these events: <a href="/export/events.csv${query ? `?${query}` : ''}" download>CSV</a> · <a href="/export/events.ndjson${query ? `?${query}` : ''}" download>NDJSON</a></p>
${page && page.data.length === 0 ? html`<p>No events match.</p>` : ''}
${page && page.data.length > 0 ? html`<div class="scroll"><table><thead><tr><th scope="col">Time (UTC)</th><th scope="col">Method</th><th scope="col">Transport</th><th scope="col">Source</th><th scope="col">Called number</th><th scope="col">User agent</th><th scope="col">Node</th></tr></thead><tbody>${rows}</tbody></table></div>` : ''}
${cursor ? html`<p><a href="/events${query ? `?${query}` : ''}">← Newest events</a></p>` : ''}${next}`;
    return sendPage(request, reply, 'Events', content, errors ? 422 : 200);
  });

  app.get('/events/:uuid', { config: { web: 'account' } }, async (request, reply) => {
    const event = await services.eventQuery.get(accountOf(request), (request.params as { uuid: string }).uuid);
    const { sip_message, ...fields } = event;
    // The number and the address it names lead to their pages.
    const shown = (name: string, value: string) => (name === 'called_number' ? numberLink(value) : name === 'source_ip' ? addressLink(value) : value);
    const rows = Object.entries(fields).map(([name, value]) => html`<dt>${name}</dt><dd>${shown(name, String(value))}</dd>`);
    return sendPage(request, reply, 'Event', html`<dl class="fields">${rows}</dl><h2>SIP message</h2><pre class="sip">${sip_message}</pre><p><a href="/events">Back to the events</a></p>`);
  });

  for (const [extension, type, lines] of [
    ['csv', 'text/csv; charset=utf-8', csvLines],
    ['ndjson', 'application/x-ndjson', ndjsonLines],
  ] as const) {
    app.get(`/export/events.${extension}`, { config: { web: 'account' } }, async (request, reply) => {
      const account = accountOf(request);
      const filters = filtersOf(request);
      // The filters are judged before the first byte is sent: a bad one is a page, not a cut stream.
      await services.eventQuery.list(account, { ...filters, limit: 1 });
      const stamp = new Date().toISOString().slice(0, 19).replace(/:/g, '');
      reply.type(type).header('content-disposition', `attachment; filename="tollwatch-events-${stamp}.${extension}"`);
      return reply.send(Readable.from(lines(exportedEvents(services.eventQuery, account, filters))));
    });
  }
}

/** The filters given, empty fields dropped (an empty form field means "any"). */
function filtersOf(request: FastifyRequest): Record<string, string> {
  const filters: Record<string, string> = {};
  for (const name of FILTERS) {
    const value = textParam(request, name);
    if (value) filters[name] = value;
  }
  return filters;
}

function textParam(request: FastifyRequest, name: string): string | undefined {
  const value = (request.query as Record<string, unknown>)[name];
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
}

function filterForm(filters: Record<string, string>): Html {
  const input = (name: string, label: string, placeholder: string) =>
    html`<div><label for="f-${name}">${label}</label><input id="f-${name}" name="${name}" value="${filters[name] ?? ''}" placeholder="${placeholder}"></div>`;
  const choice = (name: string, label: string, options: readonly string[]) =>
    html`<div><label for="f-${name}">${label}</label><select id="f-${name}" name="${name}"><option value="">any</option>${options.map((o) => html`<option${filters[name] === o ? html` selected` : ''}>${o}</option>`)}</select></div>`;
  return html`<form method="get" action="/events" class="filters">
${input('since', 'Since', '2026-11-20T00:00:00Z')}${input('until', 'Until', '2026-11-21T00:00:00Z')}
${input('called_number', 'Called number', '+46812118532')}${input('source_ip', 'Source address', '203.0.113.7')}
${input('sip_method', 'SIP method', 'INVITE')}${input('node_id', 'Node id', 'UUID')}
${choice('collected_method', 'Collected', COLLECTED_METHODS)}${choice('transport_type', 'Transport', TRANSPORT_TYPES)}
<div class="buttons"><button type="submit">Filter</button> <a href="/events">Clear</a></div>
</form>`;
}

import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { COLLECTED_METHODS, TRANSPORT_TYPES } from '../../domain/events/event-fields.ts';
import { QUERY_PARAMETERS, type BrowsedPage } from '../../domain/events/event-query.ts';
import type { Account } from '../../domain/accounts/accounts.ts';
import { countOf, countText } from '../../domain/readable-numbers.ts';
import { ServiceError } from '../../domain/errors.ts';
import type { Services } from '../../services.ts';
import { csvLines, exportedEvents, ndjsonLines } from '../event-export.ts';
import { toSecond } from '../time-text.ts';
import { html, type Html } from '../html.ts';
import { sendPage } from '../layout.ts';
import { addressLink, numberLink, userAgentText } from '../subject-links.ts';
import { FieldErrors } from '../field-errors.ts';
import { accountOf } from '../web-session.ts';

/** What these routes use of the services. */
type RouteServices = Pick<Services, 'activity' | 'eventQuery'>;

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
    // `cursor` reads on to older events (as the API's does), `newer` back towards the newest.
    const cursor = textParam(request, 'cursor');
    const newer = cursor ? undefined : textParam(request, 'newer');
    // The filter form sends every field, empty or not: its URL is said again without the empty
    // ones, so what is kept, bookmarked or shared names only the filters in use.
    const place = placeOf(filters, cursor, newer);
    if (Object.keys(request.query as object).length !== [...new URLSearchParams(place)].length) return reply.redirect(`/events${place ? `?${place}` : ''}`, 303);
    let page: BrowsedPage | undefined;
    let errors: Html | undefined;
    let fieldErrors: FieldErrors | undefined;
    const names = await services.activity.nodeNames(account);
    const query = queryOf(filters);
    let where: Html | string = '';
    try {
      page = await services.eventQuery.browse(account, { ...query, limit: PAGE_SIZE, ...((cursor ?? newer) ? { cursor: cursor ?? newer } : {}) }, newer ? 'newer' : 'older');
      where = await placeText(services, account, query, page);
    } catch (err) {
      if (!(err instanceof ServiceError) || err.code !== 'validation_failed') throw err;
      fieldErrors = new FieldErrors(err, FILTER_LABELS);
      errors = html`<div class="error" role="alert">${fieldErrors.summary()}</div>`;
    }
    const filterQuery = new URLSearchParams(filters).toString();
    const rows = (page?.data ?? []).map(
      (e) => html`<tr><td data-label="Time (UTC)"><a href="/events/${e.event_uuid}${place ? `?${new URLSearchParams({ from: place }).toString()}` : ''}"><time datetime="${e.event_time}">${toSecond(e.event_time)}</time></a></td><td data-label="Method">${e.sip_method}</td><td data-label="Source" class="wide">${addressLink(e.source_ip)}</td><td data-label="Called number">${numberLink(e.called_number)}</td><td data-label="User agent" class="wide">${userAgentText(e.sip_user_agent)}</td><td data-label="Transport">${e.transport_type}</td><td data-label="Node"><a href="/events?${new URLSearchParams({ node_id: e.created_by_node_id }).toString()}" title="This node’s events">${names.get(e.created_by_node_id) ?? html`<code>${e.created_by_node_id.slice(0, 8)}</code>`}</a></td></tr>`,
    );
    const link = (extra: Record<string, string>) => `/events?${new URLSearchParams({ ...filters, ...extra }).toString()}`.replace(/\?$/, '');
    const paging = page && (page.newer_cursor || page.next_cursor)
      ? html`<nav class="paging" aria-label="Pages of events"><ul>${page.newer_cursor ? html`<li><a href="${link({})}">« Newest</a></li><li><a rel="prev" href="${link({ newer: page.newer_cursor })}">‹ Newer</a></li>` : ''}${page.next_cursor ? html`<li><a rel="next" href="${link({ cursor: page.next_cursor })}">Older ›</a></li>` : ''}</ul></nav>`
      : '';
    const content = html`<details class="filters-fold" open${Object.keys(filters).length > 0 || errors ? '' : html` data-fold-narrow`}><summary>Filters${Object.keys(filters).length > 0 ? ` (${countText(Object.keys(filters).length)} in use)` : ''}</summary>${filterForm(filters, names, fieldErrors)}</details>${errors}
<p class="exports">Export these events: <a href="/export/events.csv${filterQuery ? `?${filterQuery}` : ''}" download>CSV</a> · <a href="/export/events.ndjson${filterQuery ? `?${filterQuery}` : ''}" download>NDJSON</a></p>
${page && page.data.length === 0 ? (page.next_cursor ? html`<p>None of the newest events read matches the range; older ones may.</p>` : html`<p>No events match.</p>`) : ''}
${page && page.data.length > 0 ? html`<p class="place" id="events-place">${where}</p><div class="scroll events" tabindex="0" role="region" aria-label="Events"><table class="cards" aria-describedby="events-place"><thead><tr><th scope="col">Time (UTC)</th><th scope="col">Method</th><th scope="col">Source</th><th scope="col">Called number</th><th scope="col">User agent</th><th scope="col">Transport</th><th scope="col">Node</th></tr></thead><tbody>${rows}</tbody></table></div>` : ''}
${paging}`;
    return sendPage(request, reply, 'Events', content, errors ? 422 : 200);
  });

  app.get('/events/:uuid', { config: { web: 'account' } }, async (request, reply) => {
    const event = await services.eventQuery.get(accountOf(request), (request.params as { uuid: string }).uuid);
    // Back to the page of events it was opened from, filters and page kept: only the events
    // page's own parameters are read from `from`, and the link is always to /events.
    const from = new URLSearchParams(textParam(request, 'from') ?? '');
    const back = placeOf(Object.fromEntries(FILTERS.flatMap((name) => (from.get(name) ? [[name, from.get(name)!]] : []))), from.get('cursor') ?? undefined, from.get('newer') ?? undefined);
    const { sip_message, ...fields } = event;
    // The number and the address it names lead to their pages.
    const shown = (name: string, value: string) =>
      name === 'called_number' ? numberLink(value, true) : name === 'source_ip' ? addressLink(value) : name === 'sip_user_agent' ? userAgentText(value) : value;
    const names = await services.activity.nodeNames(accountOf(request));
    // Its node leads to the node's events (by the name the account gave it), its destination (the honeypot) to the address's page.
    const nodeLink = (id: string) => html`<a href="/events?${new URLSearchParams({ node_id: id }).toString()}" title="This node’s events">${names.get(id) ?? id}</a>${names.has(id) ? html` <code>${id}</code>` : ''}`;
    // Its two instants as every page writes times (UTC, a space for the T), to the nanosecond stored.
    const instant = (iso: string) => html`<time datetime="${iso}">${iso.replace('T', ' ').replace(/Z$/, '')}</time>`;
    const valueOf = (name: string, value: string) =>
      name === 'created_by_node_id' ? nodeLink(value) : name === 'destination_ip' ? addressLink(value) : name === 'event_time' || name === 'received_at' ? instant(value) : shown(name, value);
    // Each field in words, its name in the API, CSV and NDJSON beside it, for whoever compares.
    const rows = Object.entries(fields).map(([name, value]) => html`<dt>${FIELD_LABELS[name] ?? name} <code class="field-name">${name}</code></dt><dd>${valueOf(name, String(value))}</dd>`);
    return sendPage(request, reply, 'Event', html`<dl class="fields">${rows}</dl><h2>SIP message</h2><pre class="sip">${sip_message}</pre><p><a href="/events${back ? `?${back}` : ''}">Back to the events</a></p>`);
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
      return reply.send(Readable.from(lines(exportedEvents(services.eventQuery, account, queryOf(filters)))));
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

/** The events page's own query (its filters and page) in its one written order. */
function placeOf(filters: Record<string, string>, cursor: string | undefined, newer: string | undefined): string {
  return new URLSearchParams({ ...filters, ...(cursor ? { cursor } : newer ? { newer } : {}) }).toString();
}

/**
 * Where the page is in the whole, counted no further than the bound: "51–100 of 1,234", or
 * "… of more than 10,000" when counting on would read more than the bound.
 */
async function placeText(services: RouteServices, account: Account, query: Record<string, string>, page: BrowsedPage): Promise<string> {
  if (page.data.length === 0) return '';
  const total = await services.eventQuery.count(account, query);
  const before = page.newer_cursor ? await services.eventQuery.count(account, query, page.newer_cursor) : { count: 0, bound: 'exact' as const };
  const of = total.bound === 'exact' ? countText(total.count) : `${total.bound === 'more-than' ? 'more than' : 'at least'} ${countText(total.count)}`;
  if (before.bound !== 'exact') return `${countOf(page.data.length, 'event')}, past the newest ${countText(before.count)}, of ${of}`;
  // A count of the newer events taken after the page was read may see events that came since.
  const first = before.count + 1;
  return `Events ${countText(first)}–${countText(first + page.data.length - 1)} of ${of}`;
}

function textParam(request: FastifyRequest, name: string): string | undefined {
  const value = (request.query as Record<string, unknown>)[name];
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
}

/** An event's fields as its page names them. */
const FIELD_LABELS: Record<string, string> = {
  app_name: 'Application',
  app_version: 'Its version',
  event_timestamp: 'Time, as the node wrote it',
  event_uuid: 'Event id',
  created_by_node_id: 'Node',
  collected_method: 'Collected',
  transport_type: 'Transport',
  source_ip: 'Source address',
  destination_ip: 'Destination (the honeypot)',
  called_number: 'Called number',
  sip_method: 'SIP method',
  sip_user_agent: 'User agent',
  event_time: 'Time (UTC)',
  received_at: 'Received (UTC)',
};

/** How the filter form names what the event query may refuse. */
const FILTER_LABELS: Record<string, string> = {
  since: 'Since',
  until: 'Until',
  called_number: 'The called number',
  source_ip: 'The source address',
  sip_method: 'The SIP method',
  node_id: 'The node',
  collected_method: 'Collected',
  transport_type: 'The transport',
  cursor: 'The page',
};

/** The SIP methods offered (RFC 3261 and its extensions); another value, from a link, is offered too. */
const SIP_METHODS = ['INVITE', 'OPTIONS', 'REGISTER', 'ACK', 'BYE', 'CANCEL', 'PRACK', 'SUBSCRIBE', 'NOTIFY', 'PUBLISH', 'INFO', 'REFER', 'MESSAGE', 'UPDATE'];

/**
 * The query the form's values ask for: a date alone (`2026-11-20`) means the day's first instant
 * for "since" and its last for "until", so a day typed as a day is the whole day.
 */
function queryOf(filters: Record<string, string>): Record<string, string> {
  const query = { ...filters };
  if (/^\d{4}-\d{2}-\d{2}$/.test(query.since ?? '')) query.since = `${query.since}T00:00:00Z`;
  if (/^\d{4}-\d{2}-\d{2}$/.test(query.until ?? '')) query.until = `${query.until}T23:59:59.999999999Z`;
  return query;
}

function filterForm(filters: Record<string, string>, nodeNames: Map<string, string>, errors = new FieldErrors(undefined, FILTER_LABELS)): Html {
  const input = (name: string, label: string, hint: string) =>
    html`<div><label for="f-${name}">${label}</label><input id="f-${name}" name="${name}" value="${filters[name] ?? ''}" placeholder="${hint}"${errors.attributes(name)}>${errors.note(name)}</div>`;
  const choice = (name: string, label: string, options: readonly string[], shown: (value: string) => string = (v) => v) => {
    const offered = filters[name] && !options.includes(filters[name]) ? [...options, filters[name]] : options;
    return html`<div><label for="f-${name}">${label}</label><select id="f-${name}" name="${name}"${errors.attributes(name)}><option value="">any</option>${offered.map((o) => html`<option value="${o}"${filters[name] === o ? html` selected` : ''}>${shown(o)}</option>`)}</select>${errors.note(name)}</div>`;
  };
  // Nodes by the names the account gave them (the nodes page names them); an unnamed node is
  // chosen from the events table's node column, which links to its events.
  const named = [...nodeNames].sort((a, b) => a[1].localeCompare(b[1]));
  const nodeChoice = choice('node_id', 'Node', named.map(([id]) => id), (id) => nodeNames.get(id) ?? id);
  return html`<form method="get" action="/events" class="filters">
${input('since', 'Since (UTC)', 'a day, or a day and time')}${input('until', 'Until (UTC)', 'a day, or a day and time')}
${input('called_number', 'Called number', 'as dialled, any form')}${input('source_ip', 'Source address', 'IPv4 or IPv6, or a range such as 198.51.100.0/24')}
${choice('sip_method', 'SIP method', SIP_METHODS)}${nodeChoice}
${choice('collected_method', 'Collected', COLLECTED_METHODS)}${choice('transport_type', 'Transport', TRANSPORT_TYPES)}
<div class="buttons"><button type="submit">Filter</button> <a href="/events">Clear</a></div>
</form>`;
}

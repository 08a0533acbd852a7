import { toolNames } from '../../domain/intelligence/scanner-tags.ts';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { CountedValue } from '../../domain/accounts/account-activity.ts';
import type { Account } from '../../domain/accounts/accounts.ts';
import { ServiceError } from '../../domain/errors.ts';
import { isAbsentValue } from '../../domain/events/event-fields.ts';
import type { StoredEvent } from '../../domain/events/events.ts';
import { canonicalIpAddress } from '../../domain/ip-address.ts';
import type { IpAddressAnswer, PeerEvidenceAnswer, PhoneNumberAnswer } from '../../domain/lookups/lookup-answers.ts';
import type { Services } from '../../services.ts';
import { html, type Html } from '../html.ts';
import { sendPage } from '../layout.ts';
import { addressLink, addressPath, numberLink, numberPath, userAgentText } from '../subject-links.ts';
import { barChart, timeChart } from '../svg-charts.ts';
import { toSecond } from '../time-text.ts';
import { WebRefusal } from '../web-refusal.ts';
import { accountOf } from '../web-session.ts';
import { spendLookup } from './lookup.ts';
import { countText } from '../../domain/readable-numbers.ts';
import { normalisePhoneNumber } from '../../domain/phone-number.ts';

/** What these routes use of the services. */
type RouteServices = Pick<Services, 'eventQuery' | 'lookups' | 'spendAllowance'>;

/** The account's newest events of a number or address that the page reads: its table, chart and pairs. */
const EVENTS_READ = 500;
/** Of those, the newest listed. */
const EVENTS_LISTED = 25;
/** Pairs (sources of a number, numbers of an address) charted. */
const PAIRS_SHOWN = 10;

/**
 * A number's page and an address's (docs/dashboard.md, "Drill-down"): what a lookup answers for
 * this account (score, reasons, first and last seen, counted over its own events and the shared
 * data set), then what its own events say: activity per day, the addresses that dialled the
 * number or the numbers the address dialled, and the newest events, each linked on. Every number
 * and address the dashboard shows links here. Opening one spends a lookup, as the lookup page does.
 */
export async function subjectPages(app: FastifyInstance, { services }: { services: RouteServices }) {
  app.get('/numbers/:number', { config: { web: 'account' } }, async (request, reply) => {
    const account = accountOf(request);
    const written = (request.params as { number: string }).number;
    await spendLookup(services, account);
    let answer: PhoneNumberAnswer;
    try {
      answer = await services.lookups.phoneNumber(account, written);
    } catch (err) {
      if (err instanceof ServiceError && err.code === 'invalid_phone_number') throw new WebRefusal(404, `${written} is not a phone number: ${err.message}.`);
      throw err;
    }
    const events = await ownEvents(services, account, { called_number: answer.phone_number });
    const pairs = counted(events.map((e) => e.source_ip));
    const content = html`${answerOf(answer)}
${perDayChart(events)}
${barChart('Source addresses that dialled it', pairs.slice(0, PAIRS_SHOWN), addressPath)}
${eventsTable(events, `/events?${new URLSearchParams({ called_number: answer.phone_number }).toString()}`)}`;
    return sendPage(request, reply, `Number ${answer.phone_number}`, content);
  });

  app.get('/addresses/:address', { config: { web: 'account' } }, async (request, reply) => {
    const account = accountOf(request);
    const written = (request.params as { address: string }).address;
    const address = canonicalIpAddress(written);
    if (!address) throw new WebRefusal(404, `${written} is not an IPv4 or IPv6 address.`);
    // The canonical form has one URL: another spelling is sent there.
    if (address !== written) return reply.redirect(addressPath(address), 301);
    await spendLookup(services, account);
    const answer = await services.lookups.ipAddress(account, address);
    const events = await ownEvents(services, account, { source_ip: address });
    // A probe without a number (NOT_FOUND) dialled nothing: it is no bar of this chart.
    // Each number counted once in its one form, its key, however each probe wrote it (`0046…`, `+46…`).
    const pairs = counted(events.map((e) => e.called_number).filter((n) => !isAbsentValue(n)).map((n) => normalisePhoneNumber(n)?.key ?? n));
    const content = html`${answerOf(answer)}
${perDayChart(events)}
${barChart('Numbers it dialled', pairs.slice(0, PAIRS_SHOWN), numberPath)}
${eventsTable(events, `/events?${new URLSearchParams({ source_ip: address }).toString()}`)}`;
    return sendPage(request, reply, `Address ${address}`, content);
  });
}

async function ownEvents(services: RouteServices, account: Account, filter: Record<string, string>): Promise<StoredEvent[]> {
  return (await services.eventQuery.list(account, { ...filter, limit: EVENTS_READ })).data;
}

/** The lookup's answer as a person reads it; the facts are over everything the account may see. */
function answerOf(answer: PhoneNumberAnswer | IpAddressAnswer): Html {
  if (!answer.found) return html`<p class="unseen" role="status"><strong>Not seen</strong>: ${answer.message}</p>`;
  // A value only peers know was not seen here: it says so, rather than SEEN.
  return html`<p class="seen" role="status"><strong>${answer.seen_count === 0 ? 'REPORTED BY PEERS' : 'SEEN'}</strong>: ${answer.message}</p>
<h2>Score <meter min="0" max="100" low="30" high="70" optimum="0" value="${answer.score}">${answer.score}</meter> ${answer.score} of 100</h2>
<ul class="reasons">${answer.reasons.map((r) => html`<li>${r}</li>`)}</ul>
${answer.peers ? peersOf(answer.local_score ?? 0, answer.peers) : ''}
<dl class="fields"><dt>Seen</dt><dd>${countText(answer.seen_count)} times</dd><dt>First seen (UTC)</dt><dd>${toSecond(answer.first_seen)}</dd><dt>Last seen (UTC)</dt><dd>${toSecond(answer.last_seen)}</dd>${'tags' in answer && answer.tags.length > 0 ? html`<dt>Tools its User-Agents name</dt><dd>${toolNames(answer.tags)}</dd>` : ''}</dl>`;
}

/** What the federation's peers said (docs/federation.md): this server's own score beside theirs, and each peer's say. */
function peersOf(local: number, peers: PeerEvidenceAnswer): Html {
  return html`<h3>What peers say</h3>
<p>This server’s own evidence scores ${local} of 100; its peers’ say ${peers.score}. The score above counts both.</p>
<ul class="reasons">${peers.sightings.map((s) => html`<li>${s.peer}: confidence ${s.confidence}, trusted ${Math.round(s.trust * 100)}%, ${s.points} points${s.valid_until ? html`, until ${toSecond(s.valid_until)} UTC` : ''}</li>`)}</ul>`;
}

/**
 * The per-day chart of the events read: its first day is partial when the read stopped at
 * EVENTS_READ (older events of that day were not read), and its last when it is today.
 */
function perDayChart(events: StoredEvent[]): Html {
  const rows = perDay(events);
  const today = new Date().toISOString().slice(0, 10);
  return timeChart('Its events per day, this account’s own', rows, 'day', { first: events.length === EVENTS_READ && rows.length > 0, last: rows.at(-1)?.value === today });
}

/** Events per day, oldest first, every day from the first to the last present (a gap shows as one). */
function perDay(events: StoredEvent[]): CountedValue[] {
  if (events.length === 0) return [];
  const byDay = new Map<string, number>();
  for (const e of events) byDay.set(e.event_time.slice(0, 10), (byDay.get(e.event_time.slice(0, 10)) ?? 0) + 1);
  const days = [...byDay.keys()].sort();
  const rows: CountedValue[] = [];
  for (let day = Date.parse(days[0]!); day <= Date.parse(days.at(-1)!); day += 86_400_000) {
    const value = new Date(day).toISOString().slice(0, 10);
    rows.push({ value, count: byDay.get(value) ?? 0 });
  }
  return rows;
}

/** Each value and how often it occurs, most first (ties by value). */
function counted(values: string[]): CountedValue[] {
  const counts = new Map<string, number>();
  for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1);
  return [...counts].map(([value, count]) => ({ value, count })).sort((a, b) => b.count - a.count || a.value.localeCompare(b.value));
}

function eventsTable(events: StoredEvent[], all: string): Html {
  if (events.length === 0) return html`<h2>Its events</h2><p>None of this account’s own events name it: what is above comes from the shared data set.</p>`;
  const rows = events.slice(0, EVENTS_LISTED).map(
    (e) => html`<tr><td><a href="/events/${e.event_uuid}"><time datetime="${e.event_time}">${toSecond(e.event_time)}</time></a></td><td>${e.sip_method}</td><td>${addressLink(e.source_ip)}</td><td>${numberLink(e.called_number)}</td><td>${userAgentText(e.sip_user_agent)}</td></tr>`,
  );
  const read = events.length === EVENTS_READ ? `the newest ${countText(EVENTS_READ)}` : `all ${countText(events.length)}`;
  return html`<h2>Its events</h2>
<p>The charts count ${read} of this account’s own events that name it; the newest ${Math.min(EVENTS_LISTED, events.length)} are below. <a href="${all}">All of them on the events page →</a></p>
<div class="scroll" tabindex="0" role="region" aria-label="Newest events"><table><thead><tr><th scope="col">Time (UTC)</th><th scope="col">Method</th><th scope="col">Source</th><th scope="col">Called number</th><th scope="col">User agent</th></tr></thead><tbody>${rows}</tbody></table></div>`;
}

import { isAbsentValue } from '../domain/events/event-fields.ts';
import { html, type Html } from './html.ts';

/**
 * Links to the drill-down pages (web/routes/subjects.ts) of a called number and a source
 * address, wherever one is shown: events, an event, charts, lookups. A value the node wrote for
 * "absent" (empty, NOT_FOUND) names nothing: it is shown as what it means, never linked.
 */
export function numberPath(number: string): string {
  return `/numbers/${encodeURIComponent(number)}`;
}

export function addressPath(address: string): string {
  return `/addresses/${encodeURIComponent(address)}`;
}

export function numberLink(number: string): Html {
  return isAbsentValue(number) ? absent('no number', number) : html`<a href="${numberPath(number)}">${number}</a>`;
}

/** A User-Agent as sent, or what an absent one means. */
export function userAgentText(userAgent: string): Html | string {
  return isAbsentValue(userAgent) ? absent('none sent', userAgent) : userAgent;
}

/** What an absent value means, with what the node wrote in a tooltip for whoever compares with the raw event. */
function absent(meaning: string, written: string): Html {
  return html`<span class="absent" title="${written === '' ? 'empty' : `sent as ${written}`}">${meaning}</span>`;
}

export function addressLink(address: string): Html {
  return html`<a href="${addressPath(address)}">${address}</a>`;
}

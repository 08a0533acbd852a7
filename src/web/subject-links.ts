import { isAbsentValue } from '../domain/events/event-fields.ts';
import { normalisePhoneNumber } from '../domain/phone-number.ts';
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

/**
 * A called number, linked to its page. In tables it is shown in the one form every page uses for
 * it, its key (`+37052140701` however it was dialled: `0037052140701`, `tel:+370 5…`), the form
 * dialled in the tooltip; `asSent` shows it as the node sent it (an event's own fields).
 */
export function numberLink(number: string, asSent = false): Html {
  if (isAbsentValue(number)) return absent('no number', number);
  const key = normalisePhoneNumber(number)?.key;
  if (!key || key === number) return html`<a href="${numberPath(number)}">${number}</a>`;
  return asSent ? html`<a href="${numberPath(key)}" title="${key}">${number}</a>` : html`<a href="${numberPath(key)}" title="dialled as ${number}">${key}</a>`;
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

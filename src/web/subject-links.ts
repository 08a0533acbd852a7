import { isAbsentValue } from '../domain/events/event-fields.ts';
import { html, type Html } from './html.ts';

/**
 * Links to the drill-down pages (web/routes/subjects.ts) of a called number and a source
 * address, wherever one is shown: events, an event, charts, lookups. A value the node wrote for
 * "absent" (empty, NOT_FOUND) names nothing and stays text.
 */
export function numberPath(number: string): string {
  return `/numbers/${encodeURIComponent(number)}`;
}

export function addressPath(address: string): string {
  return `/addresses/${encodeURIComponent(address)}`;
}

export function numberLink(number: string): Html {
  return isAbsentValue(number) ? html`${number}` : html`<a href="${numberPath(number)}">${number}</a>`;
}

export function addressLink(address: string): Html {
  return html`<a href="${addressPath(address)}">${address}</a>`;
}

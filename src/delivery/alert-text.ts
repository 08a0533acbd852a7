import type { AlertPayload } from '../domain/alerts/alerts.ts';
import { toolNames } from '../domain/intelligence/scanner-tags.ts';

/**
 * "score 41: called from 2 distinct source addresses": the score and its strongest reason, as
 * evidence rather than a verdict (docs/scoring.md); empty for an alert written without one.
 */
function evidence(data: Record<string, unknown>): string {
  if (typeof data.score !== 'number') return '';
  const reason = Array.isArray(data.reasons) && typeof data.reasons[0] === 'string' ? `: ${data.reasons[0]}` : '';
  const tools = Array.isArray(data.tags) && data.tags.length > 0 ? `; its User-Agents name ${toolNames(data.tags.map(String))}` : '';
  return `, score ${data.score}${reason}${tools}`;
}

/** A one-line headline of an alert, for Slack's `text` and an email's subject. */
export function headline(payload: AlertPayload): string {
  const d = payload.data;
  switch (payload.type) {
    case 'lookup.matched':
      return d.lookup === 'ip_address'
        ? `Tollwatch: a looked-up address was seen probing honeypots (${String(d.ip_address)}${evidence(d)})`
        : `Tollwatch: a looked-up number was seen in honeypot probes (${String(d.phone_number)}${evidence(d)})`;
    case 'number.first_seen':
      return `Tollwatch: your nodes saw a number for the first time (${String(d.phone_number)}${evidence(d)})`;
    case 'node.silent':
      return `Tollwatch: node ${String(d.node_id)} stopped sending events`;
    default:
      return 'Tollwatch: test delivery';
  }
}

/** The alert's fields as `name: value` lines, in the order the payload has them. */
export function detailLines(payload: AlertPayload): string[] {
  return Object.entries(payload.data).map(([name, value]) => `${name}: ${typeof value === 'string' ? value : JSON.stringify(value)}`);
}

/** The plain-text body of an alert mail. */
export function mailText(payload: AlertPayload): string {
  return [headline(payload), '', `type: ${payload.type}`, `timestamp: ${payload.timestamp}`, ...detailLines(payload), ''].join('\n');
}

/** A Slack incoming-webhook message: `text` for notifications, blocks for the channel. */
export function slackMessage(payload: AlertPayload): Record<string, unknown> {
  const title = headline(payload);
  // Slack reads &, < and > as markup; the values are the service's, but escaped all the same.
  const escape = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  return {
    text: escape(title),
    blocks: [
      { type: 'header', text: { type: 'plain_text', text: title.slice(0, 150) } },
      { type: 'section', text: { type: 'mrkdwn', text: escape([`type: ${payload.type}`, ...detailLines(payload)].join('\n')).slice(0, 3000) } },
      { type: 'context', elements: [{ type: 'mrkdwn', text: escape(payload.timestamp) }] },
    ],
  };
}

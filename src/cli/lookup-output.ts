import type { BulkItemError, IpAddressBulkResult, IpAddressLookup, PhoneNumberBulkResult, PhoneNumberLookup, RangeLookup } from '../../sdk/src/index.ts';
import { csvField } from '../domain/csv-cells.ts';
import { terminalJson, terminalText } from './terminal-text.ts';

/*
 * How `lookup` and `ip` write their answers, here and in the standalone `tollwatch-cli`
 * (cli/src/), which compiles this file in: like everything that package takes from src/, it
 * imports only the SDK, pure domain modules and node: built-ins (test/layers.test.ts).
 */

/** Exit statuses of the lookups, for dial plans and scripts (docs/clients.md, docs/cli.md). */
export const FOUND = 0;
export const NOT_FOUND = 1;
export const FAILED = 2;

/** How answers are written: readable text, one JSON object a line, or CSV with a header. */
export type OutputFormat = 'text' | 'json' | 'csv';

/** Any one answer a lookup can give for one value. */
export type LookupResult = PhoneNumberBulkResult | IpAddressBulkResult | RangeLookup;

/** One value's answer, as a line of a list: the columns of the CSV, in order. */
interface Row {
  input: string;
  found: boolean | undefined;
  score: number | undefined;
  seen_count: number | undefined;
  first_seen: string | undefined;
  last_seen: string | undefined;
  reasons: string[];
  error: string | undefined;
}

export const CSV_HEADER = 'input,found,score,seen_count,first_seen,last_seen,reasons,error';

export function isItemError(result: LookupResult): result is BulkItemError {
  return 'error' in result;
}

/** The readable answer to one value looked up alone: every fact the answer holds. */
export function describePhoneNumber(answer: PhoneNumberLookup): string {
  if (!answer.found) return [terminalText`${answer.phone_number}  not seen  ${answer.message}`, ...allowlistLine(answer)].join('\n');
  const lines = [
    terminalText`${answer.phone_number}  SEEN  ${answer.message}`,
    terminalText`  score             ${answer.score}: ${answer.reasons.join('; ')}`,
    terminalText`  first seen        ${answer.first_seen}`,
    terminalText`  last seen         ${answer.last_seen}`,
    terminalText`  source addresses  ${answer.source_ip_count}`,
    terminalText`  SIP methods       ${counts(answer.sip_methods)}`,
    terminalText`  written as        ${answer.matched_forms.join(', ')}`,
  ];
  if (answer.e164) lines.push(terminalText`  E.164             ${answer.e164}${answer.country ? ` (${answer.country}${answer.number_type ? `, ${answer.number_type}` : ''})` : ''}`);
  return [...lines, ...allowlistLine(answer)].join('\n');
}

/** Said of an answer the account's own allowlist covers (docs/api.md §16), found or not. */
function allowlistLine(answer: PhoneNumberLookup | IpAddressLookup): string[] {
  const entry = answer.allowlist_entry;
  return answer.allowlisted && entry ? [terminalText`  allowlisted       yes, by your ${entry.kind.replace('_', ' ')} entry ${entry.value} (${entry.id}): do not block`] : [];
}

export function describeIpAddress(answer: IpAddressLookup): string {
  if (!answer.found) return [terminalText`${answer.ip_address}  not seen  ${answer.message}`, ...allowlistLine(answer)].join('\n');
  return [
    terminalText`${answer.ip_address}  SEEN  ${answer.message}`,
    terminalText`  score             ${answer.score}: ${answer.reasons.join('; ')}`,
    terminalText`  first seen        ${answer.first_seen}`,
    terminalText`  last seen         ${answer.last_seen}`,
    terminalText`  numbers dialled   ${answer.called_number_count}`,
    terminalText`  transports        ${counts(answer.transports)}`,
    terminalText`  user agents       ${answer.user_agents.map((u) => `${u.user_agent || '(none)'} ${u.count}`).join(', ')}`,
    ...allowlistLine(answer),
  ].join('\n');
}

export function describeRange(answer: RangeLookup): string {
  if (!answer.found) return terminalText`${answer.key}  not seen  (asked privately, by hash prefix)`;
  return terminalText`${answer.key}  SEEN  ${answer.seen_count} time${answer.seen_count === 1 ? '' : 's'}, score ${answer.score} (asked privately, by hash prefix)`;
}

/** One value's answer in a list, in the format asked for (the CSV's header is the caller's to write). */
export function listLine(input: string, result: LookupResult, format: OutputFormat): string {
  if (format === 'json') return terminalJson(result);
  const row = rowOf(input, result);
  if (format === 'csv') {
    const cells = [row.input, String(row.found ?? ''), String(row.score ?? ''), String(row.seen_count ?? ''), row.first_seen ?? '', row.last_seen ?? '', row.reasons.join('; '), row.error ?? ''];
    return cells.map(csvField).join(',');
  }
  if (row.error !== undefined) return terminalText`${row.input}  invalid  ${row.error}: ${(result as BulkItemError).message}`;
  if (!row.found) return terminalText`${row.input}  not seen`;
  return terminalText`${row.input}  SEEN  score ${row.score}, ${row.seen_count} event${row.seen_count === 1 ? '' : 's'}, last ${row.last_seen ?? 'unknown'}${row.reasons[0] ? `: ${row.reasons[0]}` : ''}`;
}

function rowOf(input: string, result: LookupResult): Row {
  const row: Row = { input, found: undefined, score: undefined, seen_count: undefined, first_seen: undefined, last_seen: undefined, reasons: [], error: undefined };
  if (isItemError(result)) return { ...row, error: result.error };
  if (!result.found) return { ...row, found: false };
  row.found = true;
  row.score = result.score;
  row.seen_count = result.seen_count;
  if ('reasons' in result) {
    row.reasons = result.reasons;
    row.first_seen = result.first_seen;
    row.last_seen = result.last_seen;
  }
  return row;
}

/** `INVITE 3, OPTIONS 1`, most first. */
function counts(byName: Record<string, number | undefined>): string {
  return Object.entries(byName)
    .sort(([, a], [, b]) => (b ?? 0) - (a ?? 0))
    .map(([name, n]) => `${name} ${n ?? 0}`)
    .join(', ');
}

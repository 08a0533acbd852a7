import { tryParseJsonText } from '../json-body.ts';

/**
 * Reading a batch body's text into its items, with the bounds a batch has (docs/api.md §5):
 * at most `maxItems` items, each an object of at most MAX_ITEM_MEMBERS members. Pure, so the
 * same rules run on the main thread for small bodies and on the parse thread for large ones.
 */

/**
 * Most members one batch item may have. An event has 13 (unknown ones are ignored); a client
 * sending more than this many is not sending events, and an object of a million members costs
 * a second to build and walk.
 */
export const MAX_ITEM_MEMBERS = 256;

/**
 * What reading a batch's text gave: its items, with the items that cannot be taken listed apart
 * by index and reason (their slot holds null), or the one problem of the whole body. Plain data
 * only, so it crosses from the parse thread as it is.
 */
export type BatchText =
  | { ok: true; items: unknown; unreadable: Array<[index: number, reason: string]> }
  | { ok: false; code: 'invalid_json' | 'payload_too_large'; detail: string };

/** Reads a JSON array of events: too many items is the whole body's fault, an oversized item only its own. */
export function readJsonBatch(text: string, maxItems: number): BatchText {
  if (text === '') return { ok: false, code: 'invalid_json', detail: 'the request body is empty; send a JSON document' };
  const parsed = tryParseJsonText(text);
  if (!parsed.ok) return { ok: false, code: 'invalid_json', detail: `the request body ${parsed.reason}` };
  // Not an array: the route says what a batch must be.
  if (!Array.isArray(parsed.value)) return { ok: true, items: parsed.value, unreadable: [] };
  if (parsed.value.length > maxItems) return { ok: false, code: 'payload_too_large', detail: `a batch holds at most ${maxItems} events` };
  return bounded(parsed.value.map((value) => ({ ok: true as const, value })));
}

/**
 * Reads NDJSON, one event per line. Lines are counted before any is parsed, so a body of more
 * than `maxItems` lines costs a split, not a parse; a line that is not JSON fails only itself.
 */
export function readNdjsonBatch(text: string, maxItems: number): BatchText {
  const lines = text.split('\n').filter((line) => line.trim().length > 0);
  if (lines.length > maxItems) return { ok: false, code: 'payload_too_large', detail: `a batch holds at most ${maxItems} events` };
  return bounded(lines.map((line) => tryParseJsonText(line)));
}

/** The items that may go on, and the index and reason of each that may not. */
function bounded(parsed: Array<{ ok: true; value: unknown } | { ok: false; reason: string }>): BatchText {
  const unreadable: Array<[number, string]> = [];
  const items = parsed.map((item, index) => {
    const reason = item.ok ? tooManyMembers(item.value) : item.reason;
    if (reason === undefined) return (item as { value: unknown }).value;
    unreadable.push([index, reason]);
    return null;
  });
  return { ok: true, items, unreadable };
}

function tooManyMembers(item: unknown): string | undefined {
  if (typeof item !== 'object' || item === null || Array.isArray(item)) return undefined;
  let members = 0;
  for (const _ in item) if (++members > MAX_ITEM_MEMBERS) return `has more than ${MAX_ITEM_MEMBERS} members`;
  return undefined;
}

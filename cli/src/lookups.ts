import type { CallOptions, Tollwatch } from '../../sdk/src/index.ts';
import { CSV_HEADER, describeIpAddress, describePhoneNumber, describeRange, FOUND, isItemError, listLine, NOT_FOUND, FAILED, type LookupResult, type OutputFormat } from '../../src/cli/lookup-output.ts';

/** Values a bulk request carries (docs/api.md §7): the list is sent 1,000 at a time, answers written as each request returns. */
const BULK_VALUES = 1000;

/** What to look up and how to answer. */
export interface LookupRequest {
  kind: 'phone-numbers' | 'ip-addresses';
  /** The values, one lookup each; read from standard input when `fromInput`. */
  values: AsyncIterable<string> | readonly string[];
  /** One value named on the command line gets the detailed answer; a list gets one line a value. */
  single: boolean;
  format: OutputFormat;
  /** Numbers only: send 5 hex digits of each number's hash, never the number (docs/api.md §13). */
  private: boolean;
  /** Bounds each request (the single lookup, or each bulk request of 1,000). */
  bounds: CallOptions;
}

/**
 * Looks the values up and writes the answers. The exit status: 0 when any value was seen, 1 when
 * none was, 2 when any value was invalid and none seen (a failed request throws, also 2).
 */
export async function runLookups(client: Tollwatch, request: LookupRequest, write: (line: string) => void): Promise<number> {
  if (request.single) return single(client, request, write);
  if (request.format === 'csv') write(CSV_HEADER);
  let seen = false;
  let invalid = false;
  const tally = (input: string, result: LookupResult) => {
    if (isItemError(result)) invalid = true;
    else if (result.found) seen = true;
    write(listLine(input, result, request.format));
  };
  for await (const chunk of chunks(request.values, request.private ? 1 : BULK_VALUES)) {
    if (request.private) {
      for (const value of chunk) tally(value, await rangeOrInvalid(client, value, request.bounds));
      continue;
    }
    const results = request.kind === 'phone-numbers' ? await client.lookupPhoneNumbers(chunk, request.bounds) : await client.lookupIpAddresses(chunk, request.bounds);
    results.forEach((result, i) => tally(chunk[i]!, result));
  }
  return seen ? FOUND : invalid ? FAILED : NOT_FOUND;
}

async function single(client: Tollwatch, request: LookupRequest, write: (line: string) => void): Promise<number> {
  let value: string | undefined;
  for await (const v of request.values) value = v;
  if (value === undefined) return NOT_FOUND;
  let answer: LookupResult;
  let text: string;
  if (request.kind === 'ip-addresses') {
    const found = await client.lookupIpAddress(value, request.bounds);
    [answer, text] = [found, describeIpAddress(found)];
  } else if (request.private) {
    const found = await client.rangeLookup(value, request.bounds);
    [answer, text] = [found, describeRange(found)];
  } else {
    const found = await client.lookupPhoneNumber(value, request.bounds);
    [answer, text] = [found, describePhoneNumber(found)];
  }
  if (request.format === 'text') write(text);
  else {
    if (request.format === 'csv') write(CSV_HEADER);
    write(listLine(value, answer, request.format));
  }
  return !isItemError(answer) && answer.found ? FOUND : NOT_FOUND;
}

/** A range lookup's answer, or the bulk lookups' item error for a value that is no number. */
async function rangeOrInvalid(client: Tollwatch, value: string, bounds: CallOptions): Promise<LookupResult> {
  try {
    return await client.rangeLookup(value, bounds);
  } catch (err) {
    if (err instanceof TypeError && err.message.startsWith('not a phone number')) return { input: value, error: 'invalid_phone_number', message: err.message };
    throw err;
  }
}

/** The values in runs of `size`, blank lines skipped and each value trimmed. */
async function* chunks(values: AsyncIterable<string> | readonly string[], size: number): AsyncGenerator<string[]> {
  let chunk: string[] = [];
  for await (const line of values) {
    const value = line.trim();
    if (value === '') continue;
    chunk.push(value);
    if (chunk.length === size) {
      yield chunk;
      chunk = [];
    }
  }
  if (chunk.length > 0) yield chunk;
}

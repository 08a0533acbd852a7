import type { FastifyInstance, FastifyRequest } from 'fastify';
import sjson from 'secure-json-parse';
import { ServiceError } from '../domain/errors.ts';

/** Media types whose body is read as JSON: what `curl -d '{…}'` and bare clients send (docs/api.md §5). */
export const JSON_LIKE_MEDIA_TYPES = ['application/json', 'text/plain', 'application/x-www-form-urlencoded'] as const;
const JSON_LIKE = new Set<string>(JSON_LIKE_MEDIA_TYPES);

/**
 * Deepest nesting of arrays and objects a body may have. An event is one level, a batch or a
 * bulk lookup two; 32 leaves room for any honest client and bounds everything that walks a
 * parsed body (validators, serializers) well inside the stack.
 */
export const MAX_JSON_DEPTH = 32;

/**
 * A body sent in a content coding (gzip, …) we do not decode: a 415 whose answer names the one
 * coding we accept in `Accept-Encoding` (RFC 9110 §15.5.16).
 */
export class UnsupportedContentCoding extends ServiceError {
  constructor(coding: string) {
    super('unsupported_media_type', `the content coding ${JSON.stringify(coding)} is not supported; send the body uncompressed`);
  }
}

/** Refuses a body in any content coding but identity, before anything tries to read it as text. */
export function assertIdentityCoding(request: FastifyRequest): void {
  const header = request.headers['content-encoding'];
  if (header === undefined) return;
  for (const coding of header.split(',')) {
    const name = coding.trim().toLowerCase();
    if (name !== '' && name !== 'identity') throw new UnsupportedContentCoding(coding.trim());
  }
}

/** The essence of a request's media type; no Content-Type counts as JSON (docs/api.md §5). */
export function mediaTypeOf(request: FastifyRequest): string {
  return (request.headers['content-type'] ?? 'application/json').split(';')[0]!.trim().toLowerCase();
}

/**
 * Reads an `/api` request body as JSON: identity coding, a JSON-like media type, at most
 * MAX_JSON_DEPTH levels deep. Keys that could reach an object's prototype (`__proto__`, a
 * `constructor` holding a `prototype`) are dropped, as any unknown field is (docs/api.md §5).
 */
export function readJsonBody(request: FastifyRequest, text: string): unknown {
  assertJsonLike(request);
  if (text === '') throw new ServiceError('invalid_json', 'the request body is empty; send a JSON document');
  return parseJsonText(text);
}

/** Refuses a body that is not read as JSON: a content coding but identity, or another media type (415). */
export function assertJsonLike(request: FastifyRequest): void {
  assertIdentityCoding(request);
  if (!JSON_LIKE.has(mediaTypeOf(request))) {
    throw new ServiceError('unsupported_media_type', 'send the body as application/json');
  }
}

/**
 * Makes a route scope read every request body with readJsonBody, whatever its media type: one
 * parser for all, so the answer for a refused body (415, 400) is ours, with our messages.
 */
export function readBodiesAsJson(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string' }, (request, body, done) => {
    let value: unknown;
    try {
      value = readJsonBody(request, body as string);
    } catch (err) {
      return done(err as Error, undefined);
    }
    done(null, value);
  });
}

/**
 * Parses one JSON document, with the same rules as a body. Depth is a property of the text we
 * refuse to read, like malformed syntax, so it is `invalid_json` (400) too: 422 is for a body we
 * did read whose fields are wrong.
 */
export function parseJsonText(text: string): unknown {
  const parsed = tryParseJsonText(text);
  if (!parsed.ok) throw new ServiceError('invalid_json', `the request body ${parsed.reason}`);
  return parsed.value;
}

/** Parses one JSON document (a body, an NDJSON line), or says why it cannot be read. */
export function tryParseJsonText(text: string): { ok: true; value: unknown } | { ok: false; reason: string } {
  // Checked on the text, before parsing: nested brackets are cheap to send and costly to build
  // (a 16 MiB batch of them is 8 million arrays), and deep values overflow whatever walks them.
  if (nestsDeeperThan(text, MAX_JSON_DEPTH)) {
    return { ok: false, reason: `nests arrays and objects more than ${MAX_JSON_DEPTH} levels deep` };
  }
  try {
    return { ok: true, value: sjson.parse(text, undefined, { protoAction: 'remove', constructorAction: 'remove' }) };
  } catch {
    return { ok: false, reason: 'is not valid JSON' };
  }
}

/**
 * Whether JSON text opens more than `max` arrays or objects inside one another, found in one
 * pass without recursion. Brackets inside strings do not count; malformed text may be misjudged,
 * but the parser refuses it anyway.
 */
export function nestsDeeperThan(text: string, max: number): boolean {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      // Jump to the closing quote, one not escaped by an odd run of backslashes: long strings
      // (SIP messages) are skipped by indexOf instead of a character at a time.
      for (;;) {
        const end = text.indexOf('"', i + 1);
        if (end < 0) return false;
        let slashes = 0;
        while (text.charCodeAt(end - 1 - slashes) === 0x5c /* \ */) slashes += 1;
        i = end;
        if (slashes % 2 === 0) break;
      }
    } else if (c === 0x5b /* [ */ || c === 0x7b /* { */) {
      depth += 1;
      if (depth > max) return true;
    } else if (c === 0x5d /* ] */ || c === 0x7d /* } */) {
      depth -= 1;
    }
  }
  return false;
}

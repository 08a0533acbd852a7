import type { IncomingMessage } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ServiceError } from '../domain/errors.ts';

/** The longest path value a route takes (the router's maxParamLength), after URL decoding. */
export const MAX_PATH_VALUE_LENGTH = 512;


type Flaw = 'encoding' | 'length';

/** Requests whose path was rewritten below, and why. */
const flaws = new WeakMap<IncomingMessage, Flaw>();

/**
 * Fastify's `rewriteUrl`. The router refuses a path with malformed %-encoding, or with a value
 * longer than it takes, before any route or hook sees it, and so without authentication. Here each unreadable segment is replaced (a bad encoding by
 * its literal text, an over-long value by a stand-in) and the flaw noted, so the request
 * reaches its own route after all: authenticated and permission-checked like any other, then
 * answered by `malformedPathHook` with that route's problem. Other paths are left alone.
 */
export function routeMalformedApiPaths(req: IncomingMessage): string {
  const url = req.url ?? '/';
  const pathStart = url.startsWith('/') ? 0 : absolutePathStart(url);
  if (pathStart < 0 || !url.startsWith('/api/', pathStart)) return url;
  const pathEnd = Math.min(endOr(url, url.indexOf('?', pathStart)), endOr(url, url.indexOf('#', pathStart)));
  // The common case, on every request, allocates nothing: no `%` to decode, nothing long.
  const percent = url.indexOf('%', pathStart);
  if ((percent < 0 || percent >= pathEnd) && pathEnd - pathStart <= MAX_PATH_VALUE_LENGTH) return url;
  // The next most common (a `+` written %2B): a short path that decodes whole has no flaw, since
  // no value decodes longer than it is written.
  if (pathEnd - pathStart <= MAX_PATH_VALUE_LENGTH && decodes(url.slice(pathStart, pathEnd))) return url;
  let flaw: Flaw | undefined;
  const segments = url.slice(pathStart, pathEnd).split('/').map((segment) => {
    let value: string;
    try {
      value = decodeURIComponent(segment);
    } catch {
      flaw = 'encoding';
      // Taken literally, every `%` escaped, unless the literal text is itself too long.
      return segment.length > MAX_PATH_VALUE_LENGTH ? '-' : segment.replaceAll('%', '%25');
    }
    if (value.length <= MAX_PATH_VALUE_LENGTH) return segment;
    flaw ??= 'length';
    return '-';
  });
  if (!flaw) return url;
  flaws.set(req, flaw);
  return url.slice(0, pathStart) + segments.join('/') + url.slice(pathEnd);
}

function decodes(path: string): boolean {
  try {
    decodeURIComponent(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * The `/api` preValidation hook answering a request `routeMalformedApiPaths` rewrote: it runs
 * after authentication, so only an authenticated caller with the route's permission learns
 * that the value is bad, and why. Callback style: it runs on every request, and an async hook
 * costs a promise each time.
 */
export function malformedPathHook(request: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void): void {
  const flaw = flaws.get(request.raw);
  if (!flaw || request.is404) return done();
  const { code, name } = request.routeOptions.config.pathValue ?? { code: 'not_found', name: 'resource' };
  if (code === 'not_found') return done(new ServiceError('not_found', `no such ${name}`));
  done(
    new ServiceError(
      code,
      flaw === 'encoding'
        ? `the ${name} in the path is not valid URL encoding`
        : `the ${name} in the path is longer than ${MAX_PATH_VALUE_LENGTH} characters, too long to be one`,
    ),
  );
}

function endOr(url: string, index: number): number {
  return index < 0 ? url.length : index;
}

/** Where the path of an absolute-form target (`http://host/api/…`) begins, or -1. */
function absolutePathStart(url: string): number {
  const authority = /^https?:\/\/[^/?#]*/i.exec(url);
  return authority ? authority[0].length : -1;
}

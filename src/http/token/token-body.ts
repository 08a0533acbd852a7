import { parse as parseForm } from 'node:querystring';
import formbody from '@fastify/formbody';
import type { FastifyInstance } from 'fastify';
import { invalidRequest } from '../../oauth/oauth-errors.ts';

/** The token request's media types (docs/api.md §2): JSON, JSON sent as text/plain, and a form. */
export const TOKEN_MEDIA_TYPES = ['application/json', 'text/plain', 'application/x-www-form-urlencoded'];

/**
 * How the token endpoint's scope reads bodies, at most `bodyLimit` bytes. JSON as
 * `application/json` or as `text/plain` (what `fetch` sends for a string body, and what
 * `/api/events` reads as JSON too), with the same parser; a form as RFC 6749 asks, unless it is
 * JSON sent under the form's type, which a form parser would read as one field named by the
 * whole document: that client is told which type to send, not that client_id is missing.
 */
export async function tokenBodyParsers(app: FastifyInstance, bodyLimit: number): Promise<void> {
  await app.register(formbody, { bodyLimit, parser: readForm });
  app.removeContentTypeParser('text/plain');
  app.addContentTypeParser('text/plain', { parseAs: 'string', bodyLimit }, app.getDefaultJsonParser('error', 'error'));
}

function readForm(text: string): Record<string, unknown> {
  if (text.trimStart().startsWith('{')) {
    throw invalidRequest('the body looks like JSON sent as application/x-www-form-urlencoded; send it with Content-Type: application/json');
  }
  // A field sent twice is an array, which the endpoint refuses as not a string.
  return parseForm(text);
}

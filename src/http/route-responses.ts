import { Type, type TSchema } from 'typebox';
import { PROBLEMS } from './problem.ts';

/**
 * The answers of an `/api` route as its schema's `response`, so that the OpenAPI document says
 * what the server really sends (docs/api.md §4): successes as `application/json`, every error
 * as an `application/problem+json` problem document, and on each the headers a client may act
 * on. A test holds every answer of the HTTP suite against the document.
 */

/** A response header as the document describes it; `required` is lifted to the header object. */
export interface HeaderDoc {
  type: 'string' | 'integer';
  description: string;
  required?: boolean;
  example?: string | number;
}

const API_VERSION: HeaderDoc = { type: 'string', description: 'The API version: always 1 under /api', required: true, example: '1' };
export const RETRY_AFTER: HeaderDoc = { type: 'integer', description: 'Seconds to wait before trying again', required: true, example: 30 };
export const RATE_LIMIT_POLICY: HeaderDoc = {
  type: 'string',
  description:
    'The quota policy of the route group (draft-ietf-httpapi-ratelimit-headers-10): a structured-field list naming the group, with its quota q and window w in seconds. Sent once the allowance has been consulted',
  example: '"lookups";q=3600;w=3600',
};
export const RATE_LIMIT: HeaderDoc = {
  type: 'string',
  description: 'What remains of the policy: r units left, t seconds until the window resets (draft-ietf-httpapi-ratelimit-headers-10)',
  example: '"lookups";r=3597;t=1184',
};

/** Statuses every authenticated route can answer, whatever it does. */
const COMMON_ERRORS = [401, 403, 429, 500, 503] as const;

/** Why each error status is sent, in general; a route may say more. */
const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'The body is not JSON (`invalid_json`), or a path value is not a phone number or address',
  401: 'No credentials, or a token that is malformed, expired, revoked or not ours (`invalid_token`)',
  403: 'The token lacks the permission (`insufficient_scope`), or the plan does not allow this (`plan_not_allowed`)',
  404: 'No such resource (`not_found`); another account’s answers the same',
  409: 'A conflict with what is stored (`duplicate_event`)',
  413: 'The body is larger than the route accepts (`payload_too_large`)',
  415: 'A media type or content coding the route does not read (`unsupported_media_type`)',
  422: 'Fields or parameters break their rules (`validation_failed`); `errors` names each',
  429: "The plan's allowance, or the tolerance for failed authentications, is spent (`rate_limited`)",
  500: 'A fault of the server (`server_error`); the answer says nothing more',
  503: 'The store cannot be reached just now (`unavailable`); nothing was stored',
};

export interface Success {
  description: string;
  schema: TSchema;
  /** Headers of this answer besides the API's own (API-Version, RateLimit). */
  headers?: Record<string, HeaderDoc>;
}

export interface AnswerOptions {
  /** The route's successful answers (and 404s that are normal answers, like a lookup's). */
  ok: Record<number, Success>;
  /** Error statuses the route itself can send, besides 401, 403, 429, 500 and 503. */
  errors?: number[];
  /** The route spends a plan allowance: its answers past the limiter carry the RateLimit fields. */
  limited?: boolean;
  /** Descriptions that say more than the general one for a status. */
  describe?: Record<number, string>;
  /** Statuses of the common ones (401, 403, 429, 500, 503) this route can never send. */
  without?: number[];
}

/** The `response` of an `/api` route's schema. */
export function apiAnswers({ ok, errors = [], limited = false, describe = {}, without = [] }: AnswerOptions) {
  // 401 and 403 are answered before the limiter runs; every other answer may come after it.
  const rateFields = (status: number): Record<string, HeaderDoc> =>
    limited && status !== 401 && status !== 403 ? { 'RateLimit-Policy': RATE_LIMIT_POLICY, RateLimit: RATE_LIMIT } : {};
  const response: Record<number, unknown> = {};
  for (const [code, success] of Object.entries(ok)) {
    const status = Number(code);
    response[status] = {
      description: success.description,
      headers: { 'API-Version': API_VERSION, ...rateFields(status), ...success.headers },
      content: { 'application/json': { schema: success.schema } },
    };
  }
  for (const status of [...new Set([...errors, ...COMMON_ERRORS])].sort()) {
    if (response[status] || without.includes(status)) continue;
    response[status] = {
      description: describe[status] ?? ERROR_DESCRIPTIONS[status] ?? PROBLEMS.server_error.title,
      headers: { 'API-Version': API_VERSION, ...rateFields(status), ...errorHeaders(status) },
      content: { 'application/problem+json': { schema: Type.Ref('Problem') } },
    };
  }
  return response;
}

export function errorHeaders(status: number): Record<string, HeaderDoc> {
  if (status === 401) {
    return {
      'WWW-Authenticate': {
        type: 'string',
        description: 'Bearer (with resource_metadata, and error="invalid_token" when credentials were sent), then Basic while Basic is accepted',
        required: true,
        example: 'Bearer realm="tollwatch", resource_metadata="https://tollwatch.example/.well-known/oauth-protected-resource/api", error="invalid_token"',
      },
    };
  }
  if (status === 403) {
    return {
      'WWW-Authenticate': {
        type: 'string',
        description: 'For insufficient_scope: the permission the route needs',
        example: 'Bearer realm="tollwatch", error="insufficient_scope", scope="read:events"',
      },
    };
  }
  if (status === 429 || status === 503) return { 'Retry-After': RETRY_AFTER };
  return {};
}

/**
 * Lifts `required` out of each response header's schema, where the generator copies it, onto
 * the header object, where OpenAPI reads it. Run on the finished document.
 */
export function liftRequiredHeaders(document: { paths?: Record<string, Record<string, any>> }): void {
  for (const item of Object.values(document.paths ?? {})) {
    for (const operation of Object.values(item)) {
      for (const answer of Object.values<any>(operation?.responses ?? {})) {
        for (const header of Object.values<any>(answer?.headers ?? {})) {
          if (header.schema && typeof header.schema.required === 'boolean') {
            header.required = header.schema.required;
            delete header.schema.required;
          }
          if (header.schema && 'example' in header.schema) {
            header.example = header.schema.example;
            delete header.schema.example;
          }
        }
      }
    }
  }
}

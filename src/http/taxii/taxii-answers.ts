import type { FastifyReply } from 'fastify';
import { Type } from 'typebox';
import type { Problem } from '../problem.ts';
import { problemType } from '../problem.ts';
import { errorHeaders, RATE_LIMIT, RATE_LIMIT_POLICY, type HeaderDoc } from '../route-responses.ts';

/**
 * What the TAXII 2.1 endpoints answer (docs/taxii.md): every answer, errors included, in the
 * TAXII media type (§1.6.8, §3.1), errors as its `error` resource (§3.6.1), and the OpenAPI
 * description of each so that the published document says what is sent.
 */

/** The one media type every TAXII answer is sent as. */
export const TAXII_MEDIA_TYPE = 'application/taxii+json;version=2.1';
/** What a collection holds, as its `media_types` and each manifest record say. */
export const STIX_MEDIA_TYPE = 'application/stix+json;version=2.1';

/**
 * Whether an Accept field admits a TAXII 2.1 answer (§3.1): `application/taxii+json` with no
 * version or version 2.1, or a wildcard (`curl` and browsers send `*∕*`); anything else, another
 * TAXII version or only STIX or plain JSON, is 406. No Accept at all accepts anything (RFC 9110
 * §12.5.1).
 */
export function acceptsTaxii(accept: string | undefined): boolean {
  if (accept === undefined || accept.trim() === '') return true;
  return accept.split(',').some((range) => {
    const [type, ...params] = range.split(';').map((p) => p.trim().toLowerCase());
    const named = new Map(params.map((p) => [p.slice(0, p.indexOf('=')).trim(), p.slice(p.indexOf('=') + 1).trim().replace(/^"|"$/g, '')]));
    if (named.has('q') && Number(named.get('q')) === 0) return false;
    if (type === '*/*' || type === 'application/*') return true;
    return type === 'application/taxii+json' && (!named.has('version') || named.get('version') === '2.1');
  });
}

/** The error resource (§3.6.1) of a refusal: its title, what to do, the status as text, our code. */
export function taxiiError(refusal: Problem, problemTypes: string) {
  return {
    title: refusal.title,
    description: refusal.detail,
    http_status: String(refusal.status),
    error_code: refusal.error,
    external_details: problemType(problemTypes, refusal.error),
    ...(refusal.errors ? { details: { errors: refusal.errors } } : {}),
  };
}

/** Sends a refusal as TAXII's error resource (the auth gate's and the scope's sender). */
export function sendTaxiiError(reply: FastifyReply, refusal: Problem): FastifyReply {
  return reply.code(refusal.status).header('content-type', TAXII_MEDIA_TYPE).send(taxiiError(refusal, reply.server.problemTypes));
}

const COLLECTION_EXAMPLE = {
  id: '2f9c8d7e-6b5a-4c3d-8e1f-0a9b8c7d6e5f',
  title: 'Tollwatch: numbers called by toll-fraud probes',
  alias: 'phone-numbers',
  can_read: true,
  can_write: false,
  media_types: [STIX_MEDIA_TYPE],
};

const INDICATOR_EXAMPLE = {
  type: 'indicator',
  spec_version: '2.1',
  id: 'indicator--0c9b8a7d-6e5f-5a4b-8c3d-2e1f0a9b8c7d',
  created: '2026-11-20T10:00:01.123Z',
  modified: '2026-11-27T09:50:00.000Z',
  name: 'Number called by toll-fraud probes: +46812118532',
  indicator_types: ['malicious-activity'],
  pattern: "[x-tollwatch-phone-number:value = '+46812118532']",
  pattern_type: 'stix',
  valid_from: '2026-11-20T10:00:00.918Z',
  valid_until: '2026-12-09T10:00:00.000Z',
  confidence: 54,
};

const StixObject = Type.Object(
  {
    type: Type.String(),
    spec_version: Type.Literal('2.1'),
    id: Type.String({ pattern: '^[a-z0-9-]+--[0-9a-f-]{36}$' }),
    created: Type.String(),
    modified: Type.String(),
    revoked: Type.Optional(Type.Boolean({ description: 'True on the version that revokes it: the value no longer scores the collection’s threshold' })),
  },
  { additionalProperties: true, description: 'A STIX 2.1 indicator, as the STIX feed writes it (docs/api.md §14)' },
);

/** The TAXII resources, as named schemas the scope registers. */
export const TAXII_SCHEMAS = [
  Type.Object(
    {
      title: Type.String(),
      description: Type.Optional(Type.String()),
      error_id: Type.Optional(Type.String()),
      error_code: Type.Optional(Type.String({ description: 'Our machine code (docs/api.md §4)' })),
      http_status: Type.Optional(Type.String({ description: 'The HTTP status, as text' })),
      external_details: Type.Optional(Type.String({ description: 'The section of /problems that explains the code' })),
      details: Type.Optional(Type.Object({}, { additionalProperties: true })),
    },
    { $id: 'TaxiiError', description: 'TAXII 2.1 error message (§3.6.1)' },
  ),
  Type.Object(
    {
      title: Type.String(),
      description: Type.Optional(Type.String()),
      contact: Type.Optional(Type.String()),
      default: Type.Optional(Type.String()),
      api_roots: Type.Optional(Type.Array(Type.String(), { minItems: 1 })),
    },
    {
      $id: 'TaxiiDiscovery',
      description: 'TAXII 2.1 discovery resource (§4.1.1)',
      example: { title: 'Tollwatch TAXII 2.1', description: 'Indicators of SIP toll fraud', default: 'https://tollwatch.example/taxii2/tollwatch/', api_roots: ['https://tollwatch.example/taxii2/tollwatch/'] },
    },
  ),
  Type.Object(
    {
      title: Type.String(),
      description: Type.Optional(Type.String()),
      versions: Type.Array(Type.String(), { minItems: 1 }),
      max_content_length: Type.Integer({ minimum: 1 }),
    },
    {
      $id: 'TaxiiApiRoot',
      description: 'TAXII 2.1 API root resource (§4.2.1)',
      example: { title: 'Tollwatch indicators', versions: ['application/taxii+json;version=2.1'], max_content_length: 131_072 },
    },
  ),
  Type.Object(
    {
      id: Type.String({ format: 'uuid' }),
      title: Type.String(),
      description: Type.Optional(Type.String()),
      alias: Type.Optional(Type.String()),
      can_read: Type.Boolean(),
      can_write: Type.Boolean(),
      media_types: Type.Optional(Type.Array(Type.String(), { minItems: 1 })),
    },
    { $id: 'TaxiiCollection', description: 'TAXII 2.1 collection resource (§5.2.1)', example: COLLECTION_EXAMPLE },
  ),
  Type.Object({ collections: Type.Optional(Type.Array(Type.Ref('TaxiiCollection'), { minItems: 1 })) }, { $id: 'TaxiiCollections', description: 'TAXII 2.1 collections resource (§5.1.1)', example: { collections: [COLLECTION_EXAMPLE] } }),
  Type.Object(
    {
      more: Type.Optional(Type.Boolean()),
      next: Type.Optional(Type.String()),
      objects: Type.Optional(Type.Array(StixObject, { minItems: 1 })),
    },
    { $id: 'TaxiiEnvelope', description: 'TAXII 2.1 envelope (§3.7): `{}` when nothing matches', example: { more: true, next: 'dHcxOjE3OTUwMDAwMDAxMjM', objects: [INDICATOR_EXAMPLE] } },
  ),
  Type.Object(
    {
      more: Type.Optional(Type.Boolean()),
      next: Type.Optional(Type.String()),
      objects: Type.Optional(
        Type.Array(
          Type.Object({ id: Type.String(), date_added: Type.String(), version: Type.String(), media_type: Type.Optional(Type.String()) }, { description: 'TAXII 2.1 manifest record (§5.3.1)' }),
          { minItems: 1 },
        ),
      ),
    },
    {
      $id: 'TaxiiManifest',
      description: 'TAXII 2.1 manifest resource (§5.3.1): one record per version',
      example: { more: false, objects: [{ id: INDICATOR_EXAMPLE.id, date_added: '2026-11-27T10:00:00.123000Z', version: INDICATOR_EXAMPLE.modified, media_type: STIX_MEDIA_TYPE }] },
    },
  ),
  Type.Object(
    {
      more: Type.Optional(Type.Boolean()),
      next: Type.Optional(Type.String()),
      versions: Type.Optional(Type.Array(Type.String(), { minItems: 1 })),
    },
    { $id: 'TaxiiVersions', description: 'TAXII 2.1 versions resource (§5.8.1): each version’s `modified`, oldest first', example: { more: false, versions: ['2026-11-20T10:00:01.123Z', INDICATOR_EXAMPLE.modified] } },
  ),
];

const DATE_ADDED_FIRST: HeaderDoc = { type: 'string', description: 'The date_added of the first object of this answer (TAXII 2.1 §3.2); absent when it holds none', example: '2026-11-27T10:00:00.123000Z' };
const DATE_ADDED_LAST: HeaderDoc = {
  type: 'string',
  description: 'The date_added of the last object of this answer: the next poll’s added_after (TAXII 2.1 §3.2); absent when it holds none',
  example: '2026-11-27T10:05:00.456000Z',
};

/** Why each error status is sent by a TAXII endpoint. */
const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'A malformed parameter (`validation_failed`); details.errors names each',
  401: 'No credentials, or wrong ones (`invalid_token`): Basic with a client’s id and secret, or a bearer token',
  403: 'The client lacks the collection’s permission (`insufficient_scope`), or the request would write to a read-only collection (`read_only`)',
  404: 'No such API root, collection, object or status (`not_found`)',
  406: 'The Accept field admits no TAXII 2.1 answer (`not_acceptable`)',
  429: 'The plan’s lookups allowance, or the tolerance for failed authentications, is spent (`rate_limited`)',
  500: 'A fault of the server (`server_error`); the answer says nothing more',
  503: 'The store cannot be reached just now (`unavailable`)',
};

export interface TaxiiAnswerOptions {
  /** The success (200) and its schema's name; none for a route that only refuses. */
  description?: string;
  schema?: string;
  /** Statuses the route can send besides 401, 406, 429 (when limited), 500 and 503. */
  errors?: number[];
  /** The route spends the lookups allowance: answers after the limiter carry the RateLimit fields. */
  limited?: boolean;
  /** The answer carries the date_added headers. */
  dated?: boolean;
}

/** The `response` of a TAXII route's schema. */
export function taxiiAnswers({ description, schema, errors = [], limited = false, dated = false }: TaxiiAnswerOptions) {
  const rateFields = (status: number): Record<string, HeaderDoc> => (limited && status !== 401 && status !== 403 && status !== 406 ? { 'RateLimit-Policy': RATE_LIMIT_POLICY, RateLimit: RATE_LIMIT } : {});
  const response: Record<number, unknown> = {};
  if (description && schema) {
    response[200] = {
      description,
      headers: { ...rateFields(200), ...(dated ? { 'X-TAXII-Date-Added-First': DATE_ADDED_FIRST, 'X-TAXII-Date-Added-Last': DATE_ADDED_LAST } : {}) },
      content: { 'application/taxii+json': { schema: Type.Ref(schema) } },
    };
  }
  const statuses = new Set([...errors, 401, 406, 500, 503, ...(limited ? [429] : [])]);
  for (const status of [...statuses].sort()) {
    response[status] = {
      description: ERROR_DESCRIPTIONS[status] ?? 'An error',
      headers: { ...rateFields(status), ...errorHeaders(status) },
      content: { 'application/taxii+json': { schema: Type.Ref('TaxiiError') } },
    };
  }
  return response;
}

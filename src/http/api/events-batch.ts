import type { FastifyRequest, FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { MAX_BATCH } from '../../domain/events/event-intake.ts';
import { ServiceError } from '../../domain/errors.ts';
import type { Services } from '../../services.ts';
import { principalOf } from './api-auth.ts';
import { BatchParser } from './batch-parser.ts';
import { assertIdentityCoding, assertJsonLike } from '../json-body.ts';
import { apiAnswers } from '../route-responses.ts';
import { countBatch } from '../outcome-metrics.ts';
import { nullable } from '../../domain/nullable-schema.ts';
import { jsonBodyContent, SAMPLE_EVENT } from '../schemas.ts';

/** What these routes use of the services. */
type RouteServices = Pick<Services, 'intake' | 'metrics'>;

/** 1,000 ordinary events are about 1-2 MiB; this leaves room for long SIP messages. */
export const BATCH_BODY_LIMIT = 16 * 1024 * 1024;

/** A batch as JSON: an array of events. */
const EventBatch = Type.Array(Type.Ref('HoneypotEvent'), { $id: 'EventBatch', minItems: 1, maxItems: MAX_BATCH, example: [SAMPLE_EVENT] });

/** A batch as NDJSON: one event per line. */
const EventBatchNdjson = Type.String({
  $id: 'EventBatchNdjson',
  description: 'One JSON event per line; a line that is not JSON is only that item’s failure',
  example: `${JSON.stringify(SAMPLE_EVENT)}\n`,
});

/** One event's outcome in a batch. */
const EventBatchItemResult = Type.Object(
  {
    index: Type.Integer(),
    event_uuid: nullable<string>(['string']),
    status: Type.Union([Type.Literal('created'), Type.Literal('replayed'), Type.Literal('conflict'), Type.Literal('invalid')]),
    errors: Type.Optional(Type.Array(Type.Ref('FieldError'))),
  },
  { $id: 'EventBatchItemResult' },
);

const EventBatchResult = Type.Object({
  results: Type.Array(Type.Ref('EventBatchItemResult')),
  created: Type.Integer(),
  replayed: Type.Integer(),
  conflict: Type.Integer(),
  invalid: Type.Integer(),
}, {
  $id: 'EventBatchResult',
  example: {
    results: [
      { index: 0, event_uuid: '891da16a-56b1-497f-abef-ca3a2a849bea', status: 'created' },
      { index: 1, event_uuid: null, status: 'invalid', errors: [{ field: 'event_uuid', message: 'is required' }] },
    ],
    created: 1,
    replayed: 0,
    conflict: 0,
    invalid: 1,
  },
});

/** The batch's named schemas, for the /api scope to register. */
export const EVENT_BATCH_SCHEMAS = [EventBatch, EventBatchNdjson, EventBatchItemResult, EventBatchResult];

/** The items of a batch body, or the error for a body that is no acceptable list. */
function itemsOf(request: FastifyRequest): unknown[] {
  const body = request.body;
  if (!Array.isArray(body)) {
    throw new ServiceError('validation_failed', 'a batch is a JSON array of events, or NDJSON (one event per line)');
  }
  if (body.length === 0) throw new ServiceError('validation_failed', 'a batch holds at least one event');
  if (body.length > MAX_BATCH) throw new ServiceError('payload_too_large', `a batch holds at most ${MAX_BATCH} events`);
  return body;
}

/** POST /api/events/batch: up to 1,000 events, each stored or refused on its own. */
export async function eventsBatchRoute(app: FastifyInstance, { services }: { services: RouteServices }) {
  // Batch bodies are read by a parser of their own: bounded in items (NDJSON counted line by
  // line before any is parsed) and in members per item, and large ones parsed off the thread
  // that answers requests. A line or item that cannot be taken fails only itself.
  const parser = new BatchParser();
  app.addHook('onClose', () => parser.close());
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/x-ndjson', { parseAs: 'string' }, async (request: FastifyRequest, body: string) => {
    assertIdentityCoding(request);
    return parser.read(body, true, MAX_BATCH);
  });
  app.addContentTypeParser('*', { parseAs: 'string' }, async (request: FastifyRequest, body: string) => {
    assertJsonLike(request);
    return parser.read(body, false, MAX_BATCH);
  });

  app.post(
    '/events/batch',
    {
      config: { permission: 'write:events', submission: true, rateGroup: 'submissions', rateCost: (request) => (Array.isArray(request.body) ? Math.max(1, request.body.length) : 1) },
      bodyLimit: BATCH_BODY_LIMIT,
      // Shape and size are checked before the rate limiter spends anything on the batch.
      preValidation: async (request) => void itemsOf(request),
      schema: {
        summary: 'Submit up to 1,000 events at once',
        description:
          'A JSON array of events (as application/json, text/plain, application/x-www-form-urlencoded or with no Content-Type), or NDJSON (`Content-Type: application/x-ndjson`, one event per line). Each event follows the rules of POST /api/events and is stored or refused on its own; the answer lists every outcome in order, after the valid ones have been committed. Counts against the submission limit per event.',
        operationId: 'submitEventBatch',
        tags: ['events'],
        body: jsonBodyContent(Type.Ref('EventBatch'), { 'application/x-ndjson': Type.Ref('EventBatchNdjson') }),
        response: apiAnswers({
          ok: { 200: { description: 'Every event’s outcome, in order, after the valid ones were committed', schema: Type.Ref('EventBatchResult') } },
          errors: [400, 413, 415, 422],
          limited: true,
          describe: { 413: 'More than 1,000 events, or more than 16 MiB (`payload_too_large`)', 422: 'Not an array of events, or an empty one (`validation_failed`)' },
        }),
      },
    },
    async (request) => {
      const results = await services.intake.submitBatch(principalOf(request).account, itemsOf(request));
      const count = (status: string) => results.filter((r) => r.status === status).length;
      const tallies = { created: count('created'), replayed: count('replayed'), conflict: count('conflict'), invalid: count('invalid') };
      countBatch(services.metrics, tallies);
      return { results, ...tallies };
    },
  );
}

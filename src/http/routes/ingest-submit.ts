import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type, type TSchema } from 'typebox';
import type { Services } from '../../services.ts';
import { JSON_LIKE_MEDIA_TYPES } from '../json-body.ts';
import { documentationOnly, jsonBodyContent } from '../schemas.ts';
import { EVENT_BODY_LIMIT } from './events-submit.ts';

const Acknowledgement = Type.Object({ message: Type.String({ example: 'Thank you for the event.' }) });

/*
 * The headers this route sends, documented on each answer that carries them. They are strings on
 * the wire; each pattern says exactly what is sent.
 */
const API_VERSION = { 'API-Version': Type.String({ description: 'The API version: always 1', enum: ['1'] }) };
const LOCATION = {
  Location: Type.String({ description: 'Where the account reads the event back (GET /api/events/{event_uuid})', pattern: '^/api/events/[0-9a-f-]{36}$' }),
};
const RATE_LIMIT = {
  RateLimit: Type.String({
    description: "What remains of the account's submission allowance (r) and the seconds until it resets (t) (docs/api.md §9)",
    pattern: '^"submissions";r=[0-9]+;t=[0-9]+$',
    example: '"submissions";r=99987;t=3412',
  }),
  'RateLimit-Policy': Type.String({
    description: "The account's submission allowance: q events per w seconds (docs/api.md §9)",
    pattern: '^"submissions";q=[0-9]+;w=[0-9]+$',
    example: '"submissions";q=100000;w=3600',
  }),
};
const RETRY_AFTER = { 'Retry-After': Type.String({ description: 'Seconds to wait before retrying', pattern: '^[0-9]+$' }) };

/** An answer of this route: its description, headers and body under its one media type. */
function answer(description: string, mediaType: string, schema: TSchema, headers: Record<string, TSchema>) {
  return { description, headers: { ...API_VERSION, ...headers }, content: { [mediaType]: { schema } } };
}

function problemAnswer(description: string, headers: Record<string, TSchema> = {}) {
  return answer(description, 'application/problem+json', Type.Ref('Problem'), headers);
}

/** The secret of an ingest URL, as `ingest-urls create` issues it. */
const IngestParams = Type.Object({
  secret: Type.String({
    description: 'The secret of an ingest URL: `twi_` and 43 base64url characters. It is the credential; keep it out of logs.',
    pattern: '^twi_[A-Za-z0-9_-]{43}$',
  }),
});

/** POST /ingest/{secret}: one honeypot event through a node ingest URL (docs/api.md §11). */
export const ingestSubmitRoute: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  // Requests are checked by our own code; schemas document them (the rule atop schemas.ts).
  app.setValidatorCompiler(documentationOnly);

  app.post(
    '/:secret',
    {
      config: { rateGroup: 'submissions' },
      bodyLimit: EVENT_BODY_LIMIT,
      schema: {
        summary: 'Submit one honeypot event through a node ingest URL',
        description:
          'For SentryPeer nodes that cannot use the token endpoint: the secret in the path is the credential, and no Authorization header is read. ' +
          'Answers exactly as POST /api/events does, for the account the URL belongs to (Contributor Plan only): 201 once the event is durably stored; 200 for an identical replay of an event_uuid; 409 if the uuid was used with different content. ' +
          `The body is one JSON object, read as JSON when sent as ${JSON_LIKE_MEDIA_TYPES.join(', ')} (a stock node sends application/x-www-form-urlencoded) or with no Content-Type; any other media type, or a Content-Encoding other than identity, is 415. ` +
          'An unknown or revoked URL, or one of a disabled account, is 404, and counts as a failed authentication: too many from one address are refused with 429.',
        tags: ['events'],
        security: [],
        params: IngestParams,
        body: jsonBodyContent(Type.Ref('HoneypotEvent')),
        response: {
          201: answer('The event is stored', 'application/json', Acknowledgement, { ...LOCATION, ...RATE_LIMIT }),
          200: answer('An identical event was stored before under this event_uuid; nothing new is stored', 'application/json', Acknowledgement, {
            ...LOCATION,
            ...RATE_LIMIT,
          }),
          400: problemAnswer('invalid_json: the body is not JSON, is empty, or nests deeper than 32 levels'),
          403: problemAnswer("plan_not_allowed: the account's plan does not allow submission"),
          404: problemAnswer('not_found: no such ingest URL (never issued, revoked, or its account is disabled)'),
          409: problemAnswer('duplicate_event: this account stored a different event under this event_uuid', RATE_LIMIT),
          413: problemAnswer('payload_too_large: the body is over 128 KiB'),
          415: problemAnswer('unsupported_media_type: a media type or content coding this route does not read'),
          422: problemAnswer('validation_failed: fields of the event break their rules; errors names each', RATE_LIMIT),
          429: problemAnswer(
            "rate_limited: the account's submission allowance is spent (with the RateLimit fields), or too many failed authentications came from this address (without them)",
            { ...RATE_LIMIT, ...RETRY_AFTER },
          ),
          500: problemAnswer('server_error: a fault of the server, logged; the body says nothing about it', RATE_LIMIT),
          503: problemAnswer('unavailable: the store cannot be reached just now; nothing was stored', { ...RATE_LIMIT, ...RETRY_AFTER }),
        },
      },
    },
    async (request, reply) => {
      // Set by the scope's authentication hook, which answers every request it does not admit.
      const account = request.ingestAccount!;
      const { outcome, eventUuid } = await services.intake.submit(account, request.body);
      reply.header('location', `/api/events/${eventUuid}`);
      return reply.code(outcome === 'created' ? 201 : 200).send({ message: 'Thank you for the event.' });
    },
  );
};

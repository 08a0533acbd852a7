import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { ALERT_TYPES } from '../../domain/alerts/alerts.ts';
import { DEFAULT_MIN_SCORE, INTEGRATION_KINDS, MAX_LOG_PAGE } from '../../domain/alerts/integrations.ts';
import type { Services } from '../../services.ts';
import { apiAnswers } from '../route-responses.ts';
import { principalOf } from './api-auth.ts';
import { nullable } from '../../domain/nullable-schema.ts';
import { formatSchema } from '../schemas.ts';

/** What these routes use of the services. */
type RouteServices = Pick<Services, 'integrations'>;

const MinScore = Type.Integer({
  minimum: 0,
  maximum: 100,
  description: `Alerts that carry a score (\`lookup.matched\`, \`number.first_seen\`) are sent only at or above it (docs/scoring.md); ${DEFAULT_MIN_SCORE} by default, which one call attempt reaches and one scan does not`,
});

const AlertTypes = Type.Array(Type.Enum([...ALERT_TYPES], { type: 'string' }), { minItems: 1, uniqueItems: true, description: 'The alert types it receives' });

/** An integration as its owner sees it (docs/api.md §12); the /api scope registers it (a schema added here would bring a validator compiler of its own). */
const integrationProperties = {
    id: Type.String({ format: 'uuid' }),
    kind: Type.Enum([...INTEGRATION_KINDS], { type: 'string' }),
    name: Type.String(),
    url: Type.Optional(Type.String({ description: "The webhook's URL; a Slack URL shortened to its origin, since its path is a credential" })),
    email: Type.Optional(Type.String({ description: 'The address of an email integration' })),
    alert_types: AlertTypes,
    status: Type.Enum(['active', 'pending_confirmation', 'disabled'], {
      type: 'string',
      description:
        'An email address is `pending_confirmation` until its owner follows the mailed link; an integration is `disabled` after a day in which every delivery to it failed, or by its owner, until enabled again (PATCH `enabled`). Nothing is sent to either',
    }),
    min_score: MinScore,
    created_at: Type.String({ format: 'date-time' }),
    confirmed_at: nullable<string>(['string'], { format: 'date-time' }),
    disabled_at: nullable<string>(['string'], { format: 'date-time', description: 'When it was disabled; null while it is not' }),
    disabled_reason: nullable<string>(['string'], { description: 'Why: the failures that disabled it, or its owner' }),
};
const EXAMPLE = {
  id: '0b5e2c1a-6f1d-4a57-9a43-2f0c8d6f4b10',
  kind: 'webhook',
  name: 'PBX fraud desk',
  url: 'https://pbx.example/hooks/tollwatch',
  alert_types: ['lookup.matched', 'number.first_seen'],
  status: 'active',
  min_score: DEFAULT_MIN_SCORE,
  created_at: '2026-11-23T11:00:00.000Z',
  confirmed_at: '2026-11-23T11:00:00.000Z',
  disabled_at: null,
  disabled_reason: null,
};
const IntegrationSchema = Type.Object(integrationProperties, { $id: 'Integration', additionalProperties: false, example: EXAMPLE });

const CreatedIntegration = Type.Object(
  { ...integrationProperties, secret: Type.Optional(Type.String({ description: 'A webhook’s signing secret (Standard Webhooks); shown only here', pattern: '^whsec_' })) },
  { $id: 'CreatedIntegration', additionalProperties: false, example: { ...EXAMPLE, secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' } },
);

const CreateIntegrationRequest = Type.Object(
  {
    kind: Type.Enum([...INTEGRATION_KINDS], { type: 'string' }),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'A label; the kind when absent' })),
    url: Type.Optional(Type.String({ minLength: 1, maxLength: 2048, description: 'For `webhook` and `slack` (required there): an https: URL whose host resolves only to public addresses' })),
    email: Type.Optional(Type.String({ minLength: 3, maxLength: 254, description: 'For `email` (required there)' })),
    alert_types: Type.Optional(AlertTypes),
    min_score: Type.Optional(MinScore),
  },
  { $id: 'CreateIntegrationRequest', example: { kind: 'webhook', name: 'PBX fraud desk', url: 'https://pbx.example/hooks/tollwatch', alert_types: ['lookup.matched', 'number.first_seen'] } },
);

const UpdateIntegrationRequest = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    url: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 2048,
        description: 'A `webhook` or `slack` integration only: a new URL, checked as at creation. The URL held, or a Slack URL as shown (shortened), changes nothing',
      }),
    ),
    email: Type.Optional(
      Type.String({
        minLength: 3,
        maxLength: 254,
        description: 'An `email` integration only: a new address, which is then `pending_confirmation` until the link mailed to it is followed; nothing is sent meanwhile, to it or to the old address',
      }),
    ),
    alert_types: Type.Optional(AlertTypes),
    min_score: Type.Optional(MinScore),
    enabled: Type.Optional(Type.Boolean({ description: '`true` enables a disabled integration again (its held deliveries go out); `false` disables it' })),
  },
  { $id: 'UpdateIntegrationRequest', example: { alert_types: ['node.silent'], min_score: 40 } },
);

const RotatedWebhookSecret = Type.Object(
  {
    secret: Type.String({ pattern: '^whsec_', description: 'The new signing secret; shown only here' }),
    previous_secret_expires_at: Type.String({ format: 'date-time', description: 'Until then every delivery is signed with the old secret too' }),
  },
  { $id: 'RotatedWebhookSecret', additionalProperties: false, example: { secret: 'whsec_Q2xhc3NpZmllZEJ5VG9sbHdhdGNoMjAyNg==', previous_secret_expires_at: '2026-11-24T11:00:00.000Z' } },
);

const Params = Type.Object({
  id: formatSchema('uuid', { description: "The integration's id. Any value naming none of the caller's answers 404" }),
});

const RedeliveryParams = Type.Object({
  id: formatSchema('uuid', { description: "The integration's id. Any value naming none of the caller's answers 404" }),
  delivery_id: formatSchema('uuid', { description: 'A `delivery_id` of the delivery log. One of another integration answers 404' }),
});

const DeliveryAttempt = Type.Object(
  {
    delivery_id: Type.String({ format: 'uuid' }),
    alert_id: Type.String({ description: 'The `webhook-id` of the alert: the same on every attempt' }),
    alert_type: Type.String(),
    attempt: Type.Integer({ minimum: 1 }),
    at: Type.String({ format: 'date-time' }),
    duration_ms: Type.Integer({ minimum: 0 }),
    status_code: nullable<number>(['integer'], { description: "The receiver's HTTP status; null for mail, or when no answer came" }),
    error: nullable<string>(['string'], { description: 'Why the attempt failed; null when it succeeded' }),
    outcome: Type.Enum(['delivered', 'retrying', 'failed'], { type: 'string', description: '`retrying`: another attempt is due; `failed`: given up' }),
  },
  { $id: 'DeliveryAttempt', additionalProperties: false },
);

const DeliveryLog = Type.Object(
  { attempts: Type.Array(Type.Ref('DeliveryAttempt')) },
  {
    $id: 'DeliveryLog',
    example: {
      attempts: [
        { delivery_id: '5d1f0d4e-9a0b-4c55-8f7e-3c2b1a0f9e88', alert_id: 'msg_2KWPBgLlAfxdpx2AI54pPJ85f4W', alert_type: 'number.first_seen', attempt: 2, at: '2026-11-23T11:00:12.000Z', duration_ms: 84, status_code: 200, error: null, outcome: 'delivered' },
        { delivery_id: '5d1f0d4e-9a0b-4c55-8f7e-3c2b1a0f9e88', alert_id: 'msg_2KWPBgLlAfxdpx2AI54pPJ85f4W', alert_type: 'number.first_seen', attempt: 1, at: '2026-11-23T11:00:01.000Z', duration_ms: 112, status_code: 500, error: 'answered 500', outcome: 'retrying' },
      ],
    },
  },
);

const IntegrationList = Type.Object({ integrations: Type.Array(Type.Ref('Integration')) }, { $id: 'IntegrationList', example: { integrations: [EXAMPLE] } });

/** A test alert queued for one integration. */
const QueuedTestDelivery = Type.Object({ alert_id: Type.String() }, { $id: 'QueuedTestDelivery', example: { alert_id: 'msg_2KWPBgLlAfxdpx2AI54pPJ85f4W' } });

/** A new delivery of an alert already delivered or failed. */
const QueuedRedelivery = Type.Object(
  { delivery_id: Type.String({ format: 'uuid' }) },
  { $id: 'QueuedRedelivery', example: { delivery_id: '7c9e6679-7425-40de-944b-e07fc1f90ae7' } },
);

/** The named schemas of these routes, for the /api scope to register (a referenced one before those that refer to it). */
export const INTEGRATION_SCHEMAS = [
  IntegrationSchema,
  CreatedIntegration,
  CreateIntegrationRequest,
  UpdateIntegrationRequest,
  IntegrationList,
  RotatedWebhookSecret,
  QueuedTestDelivery,
  QueuedRedelivery,
  DeliveryAttempt,
  DeliveryLog,
];

const notFound = { 404: "No such integration among the caller's (`not_found`): missing, malformed, or another account's" };
const permission = 'manage:integrations' as const;
const pathValue = { code: 'not_found' as const, name: 'integration' };

/** /api/integrations: where the account's alerts go, and how their deliveries went (docs/api.md §12). */
export async function integrationRoutes(app: FastifyInstance, { services }: { services: RouteServices }) {
  const { integrations } = services;

  app.post(
    '/integrations',
    {
      config: { permission },
      schema: {
        summary: 'Send alerts to a webhook, Slack or an email address',
        description:
          "A webhook's answer carries its signing secret (`whsec_…`, Standard Webhooks), once. An email address gets a confirmation mail and receives nothing until its link is followed. A URL is refused (422) unless it is https: and its host resolves only to public addresses.",
        operationId: 'createIntegration',
        tags: ['integrations'],
        body: Type.Ref('CreateIntegrationRequest'),
        response: apiAnswers({
          ok: {
            201: {
              description: 'Created',
              schema: Type.Ref('CreatedIntegration'),
            },
          },
          errors: [400, 409, 415, 422, 502],
          describe: {
            409: 'Email without an SMTP server (`email_not_configured`), or 20 integrations already (`limit_reached`)',
            502: 'The mail server refused the confirmation mail (`mail_unavailable`); nothing was created',
          },
        }),
      },
    },
    async (request, reply) => {
      const { account, client } = principalOf(request);
      return reply.code(201).send(await integrations.create(account, request.body, `client:${client.client_id}`));
    },
  );

  app.get(
    '/integrations',
    {
      config: { permission },
      schema: {
        summary: "The account's integrations",
        operationId: 'listIntegrations',
        tags: ['integrations'],
        response: apiAnswers({ ok: { 200: { description: 'Oldest first', schema: Type.Ref('IntegrationList') } } }),
      },
    },
    async (request) => ({ integrations: await integrations.list(principalOf(request).account.account_id) }),
  );

  app.get<{ Params: { id: string } }>(
    '/integrations/:id',
    {
      config: { permission, pathValue },
      schema: {
        summary: 'One integration',
        operationId: 'getIntegration',
        tags: ['integrations'],
        params: Params,
        response: apiAnswers({ ok: { 200: { description: 'The integration', schema: Type.Ref('Integration') } }, errors: [404], describe: notFound }),
      },
    },
    async (request) => integrations.get(principalOf(request).account.account_id, request.params.id),
  );

  app.patch<{ Params: { id: string } }>(
    '/integrations/:id',
    {
      config: { permission, pathValue },
      schema: {
        summary: 'Rename an integration, point it elsewhere, change what it receives, or enable or disable it',
        description:
          'A new URL is refused (422) as at creation. A new email address gets a confirmation mail and receives nothing until its link is followed; deliveries already queued wait for it.',
        operationId: 'updateIntegration',
        tags: ['integrations'],
        params: Params,
        body: Type.Ref('UpdateIntegrationRequest'),
        response: apiAnswers({
          ok: { 200: { description: 'As changed', schema: Type.Ref('Integration') } },
          errors: [400, 404, 409, 415, 422, 502],
          describe: {
            ...notFound,
            409: 'A new address on a server without an SMTP server (`email_not_configured`), or with 3 addresses already awaiting confirmation (`limit_reached`)',
            502: 'The mail server refused the confirmation mail (`mail_unavailable`); nothing was changed',
          },
        }),
      },
    },
    async (request) => {
      const { account, client } = principalOf(request);
      return integrations.update(account.account_id, request.params.id, request.body, `client:${client.client_id}`);
    },
  );

  app.delete<{ Params: { id: string } }>(
    '/integrations/:id',
    {
      config: { permission, pathValue },
      schema: {
        summary: 'Delete an integration, its pending deliveries and its delivery log',
        operationId: 'deleteIntegration',
        tags: ['integrations'],
        params: Params,
        response: apiAnswers({ ok: { 204: { description: 'Deleted; no body', schema: Type.Null({ example: null }) } }, errors: [404], describe: notFound }),
      },
    },
    async (request, reply) => {
      const { account, client } = principalOf(request);
      await integrations.delete(account.account_id, request.params.id, `client:${client.client_id}`);
      return reply.code(204).send();
    },
  );

  app.post<{ Params: { id: string } }>(
    '/integrations/:id/secret',
    {
      config: { permission, pathValue },
      schema: {
        summary: "Rotate a webhook's signing secret",
        description:
          'A new secret, answered once. For 24 hours the old one keeps signing beside it: every delivery carries both signatures in `webhook-signature`, so a receiver verifies with either while it switches. Any other kind is refused (422).',
        operationId: 'rotateIntegrationSecret',
        tags: ['integrations'],
        params: Params,
        response: apiAnswers({ ok: { 200: { description: 'The new secret', schema: Type.Ref('RotatedWebhookSecret') } }, errors: [404, 422], describe: notFound }),
      },
    },
    async (request) => {
      const { account, client } = principalOf(request);
      return integrations.rotateSecret(account.account_id, request.params.id, `client:${client.client_id}`);
    },
  );

  app.post<{ Params: { id: string } }>(
    '/integrations/:id/test',
    {
      config: { permission, pathValue },
      schema: {
        summary: 'Queue a test delivery to one integration',
        description:
          'An `integration.test` alert, delivered like any other (signed, retried, logged). An unconfirmed email address is refused (422); past 5 test alerts per integration in 10 minutes, or 20 per account in an hour, 429 with `Retry-After`.',
        operationId: 'testIntegration',
        tags: ['integrations'],
        params: Params,
        response: apiAnswers({
          ok: { 202: { description: 'Queued; its attempts appear in the delivery log', schema: Type.Ref('QueuedTestDelivery') } },
          errors: [404, 422],
          describe: { ...notFound, 429: 'Too many test alerts (`rate_limited`): 5 per integration in 10 minutes, 20 per account in an hour; `Retry-After` says when to send another' },
        }),
      },
    },
    async (request, reply) => reply.code(202).send(await integrations.test(principalOf(request).account.account_id, request.params.id)),
  );

  app.post<{ Params: { id: string; delivery_id: string } }>(
    '/integrations/:id/deliveries/:delivery_id/retry',
    {
      config: { permission, pathValue },
      schema: {
        summary: 'Send an alert again',
        description:
          'A new delivery of the alert a delivered or failed delivery carried (the same `webhook-id`), due at once and retried for a day like any other; the old one stays in the log. A delivery still being attempted is refused (422).',
        operationId: 'redeliverIntegrationDelivery',
        tags: ['integrations'],
        params: RedeliveryParams,
        response: apiAnswers({
          ok: { 202: { description: 'Queued; its attempts appear in the delivery log under the new id', schema: Type.Ref('QueuedRedelivery') } },
          errors: [404, 422],
          describe: notFound,
        }),
      },
    },
    async (request, reply) => {
      const { account, client } = principalOf(request);
      return reply.code(202).send(await integrations.redeliver(account.account_id, request.params.id, request.params.delivery_id, `client:${client.client_id}`));
    },
  );

  app.get<{ Params: { id: string } }>(
    '/integrations/:id/deliveries',
    {
      config: { permission, pathValue },
      schema: {
        summary: "An integration's delivery log: every attempt, newest first",
        operationId: 'listIntegrationDeliveries',
        tags: ['integrations'],
        params: Params,
        querystring: Type.Object(
          { limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_LOG_PAGE, default: 100, description: 'Attempts to list' })) },
          { additionalProperties: false },
        ),
        response: apiAnswers({
          ok: { 200: { description: 'The newest attempts', schema: Type.Ref('DeliveryLog') } },
          errors: [404, 422],
          describe: notFound,
        }),
      },
    },
    async (request) => integrations.attempts(principalOf(request).account.account_id, request.params.id, request.query as Record<string, unknown>),
  );
}

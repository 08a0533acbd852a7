import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { MAX_REPORT_LIST, MAX_REPORT_NOTE, REPORT_REASONS, REPORT_STATES } from '../../domain/intelligence/value-reports.ts';
import { nullable } from '../../domain/nullable-schema.ts';
import type { Services } from '../../services.ts';
import { apiAnswers } from '../route-responses.ts';
import { principalOf } from './api-auth.ts';

/** What these routes use of the services. */
type RouteServices = Pick<Services, 'reports'>;

const EXAMPLE = {
  id: '3f2b8c1e-4d5a-4e6f-8a9b-0c1d2e3f4a5b',
  phone_number: '+46812118532',
  reason: 'own_number',
  note: 'Our support line; the honeypot saw scanners dial it.',
  state: 'pending',
  created_at: '2026-12-01T10:00:00.000Z',
  decided_at: null,
  decision_note: null,
};

const Reason = Type.Enum([...REPORT_REASONS], {
  type: 'string',
  description:
    '`own_number`: the number or address is the caller’s own; `customer`: a customer’s; `legitimate_traffic`: the traffic seen was wanted; `test_traffic`: the caller’s own tests; `other`: say why in `note`',
});

const ReportSchema = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    phone_number: Type.Optional(Type.String({ description: 'The number reported, normalised as a lookup normalises it' })),
    ip_address: Type.Optional(Type.String({ description: 'The address reported, in canonical form' })),
    reason: Reason,
    note: nullable<string>(['string'], { description: 'The free text sent with it, as sent' }),
    state: Type.Enum([...REPORT_STATES], {
      type: 'string',
      description: '`pending` until the operator decides; `accepted` holds the value’s score down for every caller (docs/scoring.md); `rejected` changes nothing',
    }),
    created_at: Type.String({ format: 'date-time' }),
    decided_at: nullable<string>(['string'], { format: 'date-time', description: 'When the operator decided; null while pending' }),
    decision_note: nullable<string>(['string'], { description: 'What the operator said with the decision, if anything' }),
  },
  { $id: 'Report', additionalProperties: false, example: EXAMPLE },
);

const CreateReportRequest = Type.Object(
  {
    phone_number: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'A number as a lookup takes it (tel: and sip: URIs, separators); exactly one of `phone_number` and `ip_address`' })),
    ip_address: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'An IPv4 or IPv6 address; exactly one of `phone_number` and `ip_address`' })),
    reason: Reason,
    note: Type.Optional(nullable<string>(['string'], { maxLength: MAX_REPORT_NOTE, description: `Free text, at most ${MAX_REPORT_NOTE} characters; shown to the operator` })),
  },
  { $id: 'CreateReportRequest', additionalProperties: false, example: { phone_number: '+46812118532', reason: 'own_number', note: 'Our support line.' } },
);

const ReportList = Type.Object({ reports: Type.Array(Type.Ref('Report')) }, { $id: 'ReportList', example: { reports: [EXAMPLE] } });

/** The named schemas of these routes, for the /api scope to register. */
export const REPORT_SCHEMAS = [ReportSchema, CreateReportRequest, ReportList];

const permission = 'write:reports' as const;

/** /api/reports: false-positive reports of lookup answers, and their state (docs/api.md §17). */
export async function reportRoutes(app: FastifyInstance, { services }: { services: RouteServices }) {
  const { reports } = services;

  app.post(
    '/reports',
    {
      config: { permission, rateGroup: 'reports' },
      schema: {
        summary: 'Report a lookup answer as a false positive',
        description:
          'Stored `pending` for the operator to review; until accepted it changes no answer, the reporting account’s included. The same account reporting the same value again while its report is pending gets that report back (200), unchanged. 20 reports an hour per account, whatever the plan.',
        operationId: 'createReport',
        tags: ['reports'],
        body: Type.Ref('CreateReportRequest'),
        response: apiAnswers({
          ok: {
            201: { description: 'Stored, pending', schema: Type.Ref('Report') },
            200: { description: 'The account’s pending report of the same value, unchanged', schema: Type.Ref('Report') },
          },
          errors: [400, 415, 422],
          limited: true,
        }),
      },
    },
    async (request, reply) => {
      const { account, client } = principalOf(request);
      const { report, created } = await reports.submit(account, request.body, `client:${client.client_id}`);
      return reply.code(created ? 201 : 200).send(report);
    },
  );

  app.get(
    '/reports',
    {
      config: { permission },
      schema: {
        summary: "The account's reports and their state",
        description: `Newest first, at most ${MAX_REPORT_LIST}; only the calling account’s.`,
        operationId: 'listReports',
        tags: ['reports'],
        response: apiAnswers({ ok: { 200: { description: 'Newest first', schema: Type.Ref('ReportList') } } }),
      },
    },
    async (request) => ({ reports: await reports.listOwn(principalOf(request).account.account_id) }),
  );
}

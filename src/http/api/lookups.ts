import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type, type TSchema } from 'typebox';
import type { Services } from '../../services.ts';
import { apiAnswers } from '../route-responses.ts';
import { principalOf } from './api-auth.ts';
import { countLookupAnswer } from '../outcome-metrics.ts';
import { IP_ADDRESS_LOOKUP, PHONE_NUMBER_LOOKUP, sendAnswer, type LookupEndpoint } from '../lanes/laned-endpoints.ts';

/** What these routes use of the services. */
type RouteServices = Pick<Services, 'lookups' | 'metrics'>;

/**
 * A lookup endpoint's Fastify route, from its one description (laned-endpoints.ts), which its
 * direct lane is built from too: only what OpenAPI says of it is written here.
 */
function lookupRoute(
  app: FastifyInstance,
  services: RouteServices,
  endpoint: LookupEndpoint,
  openapi: { summary: string; description?: string; operationId: string; value: TSchema; found: string; invalid: string; answers: 'PhoneNumber' | 'IpAddress' },
) {
  const { permission, rateGroup, pathValue, kind, param } = endpoint;
  app.get(
    endpoint.path,
    {
      config: { permission, rateGroup, pathValue },
      onResponse: countLookupAnswer(services.metrics, kind),
      schema: {
        summary: openapi.summary,
        ...(openapi.description ? { description: openapi.description } : {}),
        operationId: openapi.operationId,
        tags: ['lookups'],
        params: Type.Object({ [param]: openapi.value }),
        response: apiAnswers({
          ok: {
            200: { description: openapi.found, schema: Type.Ref(`${openapi.answers}Found`) },
            404: { description: 'Never seen: a normal answer, not a problem', schema: Type.Ref(`${openapi.answers}NotFound`) },
          },
          errors: [400],
          limited: true,
          describe: { 400: openapi.invalid },
        }),
      },
    },
    async (request: FastifyRequest, reply: FastifyReply) => {
      const value = (request.params as Record<string, string>)[param]!;
      return sendAnswer(reply, await endpoint.answer(services.lookups, principalOf(request).account, value));
    },
  );
}

/** GET /api/phone-numbers/{phone-number} and GET /api/ip-addresses/{ip-address} (docs/api.md §7). */
export async function lookupRoutes(app: FastifyInstance, { services }: { services: RouteServices }) {
  lookupRoute(app, services, PHONE_NUMBER_LOOKUP, {
    summary: 'Have attackers tried to call this number?',
    description: 'Accepts +CC…, 00CC…, 011CC…, national forms, tel: and sip: URIs. 404 (a normal answer) when never seen.',
    operationId: 'lookupPhoneNumber',
    value: Type.String({ minLength: 1, maxLength: 512, description: 'The number as the caller writes it; in a URL path `+` is `%2B`', example: '+46812118532' }),
    found: 'Attackers tried to call this number',
    invalid: 'Not a phone number (`invalid_phone_number`)',
    answers: 'PhoneNumber',
  });
  lookupRoute(app, services, IP_ADDRESS_LOOKUP, {
    summary: 'Has this address probed honeypots?',
    operationId: 'lookupIpAddress',
    value: Type.String({ minLength: 1, maxLength: 512, description: 'An IPv4 or IPv6 address, any spelling', example: '203.0.113.7' }),
    found: 'This address probed honeypots',
    invalid: 'Not an IPv4 or IPv6 address (`invalid_ip_address`)',
    answers: 'IpAddress',
  });
}

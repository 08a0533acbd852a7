import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { Services } from '../../services.ts';
import { apiAnswers } from '../route-responses.ts';
import { principalOf } from '../api-auth.ts';
import { countLookupAnswer } from '../outcome-metrics.ts';

/** What these routes use of the services. */
type RouteServices = Pick<Services, 'lookups' | 'metrics'>;

/** GET /api/phone-numbers/{phone-number} and GET /api/ip-addresses/{ip-address} (docs/api.md §7). */
export async function lookupRoutes(app: FastifyInstance, { services }: { services: RouteServices }) {
  app.get<{ Params: { phone_number: string } }>(
    '/phone-numbers/:phone_number',
    {
      config: { permission: 'read:phone-numbers', rateGroup: 'lookups', pathValue: { code: 'invalid_phone_number', name: 'phone number' } },
      onResponse: countLookupAnswer(services.metrics, 'phone'),
      schema: {
        summary: 'Have attackers tried to call this number?',
        description: 'Accepts +CC…, 00CC…, 011CC…, national forms, tel: and sip: URIs. 404 (a normal answer) when never seen.',
        operationId: 'lookupPhoneNumber',
        tags: ['lookups'],
        params: Type.Object({
          phone_number: Type.String({ minLength: 1, maxLength: 512, description: 'The number as the caller writes it; in a URL path `+` is `%2B`', example: '+46812118532' }),
        }),
        response: apiAnswers({
          ok: {
            200: { description: 'Attackers tried to call this number', schema: Type.Ref('PhoneNumberFound') },
            404: { description: 'Never seen: a normal answer, not a problem', schema: Type.Ref('PhoneNumberNotFound') },
          },
          errors: [400],
          limited: true,
          describe: { 400: 'Not a phone number (`invalid_phone_number`)' },
        }),
      },
    },
    async (request, reply) => {
      const answer = await services.lookups.phoneNumber(principalOf(request).account, request.params.phone_number);
      return reply.code(answer.found ? 200 : 404).send(answer);
    },
  );

  app.get<{ Params: { ip_address: string } }>(
    '/ip-addresses/:ip_address',
    {
      config: { permission: 'read:ip-addresses', rateGroup: 'lookups', pathValue: { code: 'invalid_ip_address', name: 'IP address' } },
      onResponse: countLookupAnswer(services.metrics, 'ip'),
      schema: {
        summary: 'Has this address probed honeypots?',
        operationId: 'lookupIpAddress',
        tags: ['lookups'],
        params: Type.Object({
          ip_address: Type.String({ minLength: 1, maxLength: 512, description: 'An IPv4 or IPv6 address, any spelling', example: '203.0.113.7' }),
        }),
        response: apiAnswers({
          ok: {
            200: { description: 'This address probed honeypots', schema: Type.Ref('IpAddressFound') },
            404: { description: 'Never seen: a normal answer, not a problem', schema: Type.Ref('IpAddressNotFound') },
          },
          errors: [400],
          limited: true,
          describe: { 400: 'Not an IPv4 or IPv6 address (`invalid_ip_address`)' },
        }),
      },
    },
    async (request, reply) => {
      const answer = await services.lookups.ipAddress(principalOf(request).account, request.params.ip_address);
      return reply.code(answer.found ? 200 : 404).send(answer);
    },
  );
}

import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Services } from '../../services.ts';
import { principalOf } from '../api-auth.ts';
import { authErrors } from '../schemas.ts';

const NumberFound = Type.Object({
  phone_number: Type.String({ description: 'The number as looked up, normalised' }),
  found: Type.Literal(true),
  seen_count: Type.Integer(),
  first_seen: Type.String(),
  last_seen: Type.String(),
  source_ip_count: Type.Integer(),
  sip_methods: Type.Record(Type.String(), Type.Integer()),
  matched_forms: Type.Array(Type.String(), { description: 'Written forms seen, e.g. 0046…, +46…' }),
  e164: Type.Optional(Type.String()),
  country: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  number_type: Type.Optional(Type.Union([Type.String(), Type.Null()], { description: 'premium-rate, toll-free, mobile…' })),
  message: Type.String(),
});
const NumberNotFound = Type.Object({ phone_number: Type.String(), found: Type.Literal(false), message: Type.String() });

const IpFound = Type.Object({
  ip_address: Type.String(),
  found: Type.Literal(true),
  seen_count: Type.Integer(),
  first_seen: Type.String(),
  last_seen: Type.String(),
  called_number_count: Type.Integer(),
  user_agents: Type.Array(Type.Object({ user_agent: Type.String(), count: Type.Integer() })),
  transports: Type.Record(Type.String(), Type.Integer()),
  message: Type.String(),
});
const IpNotFound = Type.Object({ ip_address: Type.String(), found: Type.Literal(false), message: Type.String() });

/** GET /api/phone-numbers/{phone-number} and GET /api/ip-addresses/{ip-address} (docs/api.md §7). */
export const lookupRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {

  app.get(
    '/phone-numbers/:phone_number',
    {
      config: { permission: 'read:phone-numbers', rateGroup: 'lookups', pathValue: { code: 'invalid_phone_number', name: 'phone number' } },
      schema: {
        summary: 'Have attackers tried to call this number?',
        description: 'Accepts +CC…, 00CC…, 011CC…, national forms, tel: and sip: URIs. 404 (a normal answer) when never seen.',
        tags: ['lookups'],
        params: Type.Object({ phone_number: Type.String() }),
        response: { 200: NumberFound, 404: NumberNotFound, 400: Type.Ref('Problem'), ...authErrors },
      },
    },
    async (request, reply) => {
      const answer = await services.lookups.phoneNumber(principalOf(request).account, request.params.phone_number);
      return reply.code(answer.found ? 200 : 404).send(answer);
    },
  );

  app.get(
    '/ip-addresses/:ip_address',
    {
      config: { permission: 'read:ip-addresses', rateGroup: 'lookups', pathValue: { code: 'invalid_ip_address', name: 'IP address' } },
      schema: {
        summary: 'Has this address probed honeypots?',
        tags: ['lookups'],
        params: Type.Object({ ip_address: Type.String() }),
        response: { 200: IpFound, 404: IpNotFound, 400: Type.Ref('Problem'), ...authErrors },
      },
    },
    async (request, reply) => {
      const answer = await services.lookups.ipAddress(principalOf(request).account, request.params.ip_address);
      return reply.code(answer.found ? 200 : 404).send(answer);
    },
  );
};

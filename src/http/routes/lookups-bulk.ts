import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { MAX_BULK } from '../../domain/lookup-service.ts';
import type { Services } from '../../services.ts';
import { principalOf } from '../api-auth.ts';
import { authErrors } from '../schemas.ts';

const costOf = (field: string) => (request: FastifyRequest) => {
  const values = (request.body as Record<string, unknown> | undefined)?.[field];
  return Array.isArray(values) ? Math.max(1, values.length) : 1;
};

const Results = Type.Object({
  results: Type.Array(Type.Record(Type.String(), Type.Unknown()), {
    description: 'One answer per value, in order: the single lookup’s answer, or {input, error, message}',
  }),
});

/** POST /api/phone-numbers/lookup and /api/ip-addresses/lookup: up to 1,000 values at once. */
export const bulkLookupRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  app.post(
    '/phone-numbers/lookup',
    {
      config: { permission: 'read:phone-numbers', rateGroup: 'lookups', rateCost: costOf('phone_numbers') },
      schema: {
        summary: 'Look up to 1,000 phone numbers at once',
        description: 'Each value is answered as GET /api/phone-numbers/{number} would answer it (with `found`), or with its own error. Counts against the lookup limit per value.',
        tags: ['lookups'],
        body: Type.Object({ phone_numbers: Type.Array(Type.Unknown(), { minItems: 1, maxItems: MAX_BULK }) }),
        response: { 200: Results, 413: Type.Ref('Problem'), 422: Type.Ref('Problem'), ...authErrors },
      },
    },
    async (request) => ({ results: await services.lookups.phoneNumbers(principalOf(request).account, request.body.phone_numbers) }),
  );

  app.post(
    '/ip-addresses/lookup',
    {
      config: { permission: 'read:ip-addresses', rateGroup: 'lookups', rateCost: costOf('ip_addresses') },
      schema: {
        summary: 'Look up to 1,000 source addresses at once',
        tags: ['lookups'],
        body: Type.Object({ ip_addresses: Type.Array(Type.Unknown(), { minItems: 1, maxItems: MAX_BULK }) }),
        response: { 200: Results, 413: Type.Ref('Problem'), 422: Type.Ref('Problem'), ...authErrors },
      },
    },
    async (request) => ({ results: await services.lookups.ipAddresses(principalOf(request).account, request.body.ip_addresses) }),
  );
};

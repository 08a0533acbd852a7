import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { MAX_BULK } from '../../domain/lookup-service.ts';
import type { Services } from '../../services.ts';
import { principalOf } from '../api-auth.ts';
import { invalidParameter } from '../api-errors.ts';
import { authErrors } from '../schemas.ts';

type BulkField = 'phone_numbers' | 'ip_addresses';

/**
 * The values of a bulk lookup body, `{ <field>: [1 to 1,000 values] }`, or its one problem: worded
 * as the schema validator that used to check this envelope worded it, which clients may match.
 * Each value is the lookup's own to judge.
 */
function valuesOf(body: unknown, field: BulkField): unknown[] {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw invalidParameter('body', 'must be object');
  const values = (body as Record<string, unknown>)[field];
  if (values === undefined) throw invalidParameter(field, `must have required property '${field}'`);
  if (!Array.isArray(values)) throw invalidParameter(field, 'must be array');
  if (values.length < 1) throw invalidParameter(field, 'must NOT have fewer than 1 items');
  if (values.length > MAX_BULK) throw invalidParameter(field, `must NOT have more than ${MAX_BULK} items`);
  return values;
}

const costOf = (field: BulkField) => (request: FastifyRequest) => {
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
      // Checked before the rate limiter spends anything on the request.
      preValidation: async (request) => void valuesOf(request.body, 'phone_numbers'),
      schema: {
        summary: 'Look up to 1,000 phone numbers at once',
        description: 'Each value is answered as GET /api/phone-numbers/{number} would answer it (with `found`), or with its own error. Counts against the lookup limit per value.',
        tags: ['lookups'],
        body: Type.Object({ phone_numbers: Type.Array(Type.Unknown(), { minItems: 1, maxItems: MAX_BULK }) }),
        response: { 200: Results, 413: Type.Ref('Problem'), 422: Type.Ref('Problem'), ...authErrors },
      },
    },
    async (request) => ({ results: await services.lookups.phoneNumbers(principalOf(request).account, valuesOf(request.body, 'phone_numbers')) }),
  );

  app.post(
    '/ip-addresses/lookup',
    {
      config: { permission: 'read:ip-addresses', rateGroup: 'lookups', rateCost: costOf('ip_addresses') },
      preValidation: async (request) => void valuesOf(request.body, 'ip_addresses'),
      schema: {
        summary: 'Look up to 1,000 source addresses at once',
        tags: ['lookups'],
        body: Type.Object({ ip_addresses: Type.Array(Type.Unknown(), { minItems: 1, maxItems: MAX_BULK }) }),
        response: { 200: Results, 413: Type.Ref('Problem'), 422: Type.Ref('Problem'), ...authErrors },
      },
    },
    async (request) => ({ results: await services.lookups.ipAddresses(principalOf(request).account, valuesOf(request.body, 'ip_addresses')) }),
  );
};

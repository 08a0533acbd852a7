import type { FastifyRequest, FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { MAX_BULK } from '../../domain/lookups/lookup-service.ts';
import type { Services } from '../../services.ts';
import { principalOf } from './api-auth.ts';
import { invalidParameter } from './api-errors.ts';
import { apiAnswers } from '../route-responses.ts';
import { countBulkLookup } from '../outcome-metrics.ts';

/** What these routes use of the services. */
type RouteServices = Pick<Services, 'lookups' | 'metrics'>;

type BulkField = 'phone_numbers' | 'ip_addresses';

/**
 * The values of a bulk lookup body, `{ <field>: [1 to 1,000 values] }`, or its one problem,
 * worded as Ajv words a schema's refusal (clients may match the text).
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

/** POST /api/phone-numbers/lookup and /api/ip-addresses/lookup: up to 1,000 values at once. */
export async function bulkLookupRoutes(app: FastifyInstance, { services }: { services: RouteServices }) {
  const errors = {
    errors: [400, 413, 415, 422],
    limited: true,
    describe: { 422: 'Not an object holding 1 to 1,000 values (`validation_failed`)', 413: 'A body over 128 KiB (`payload_too_large`)' },
  };
  app.post(
    '/phone-numbers/lookup',
    {
      config: { permission: 'read:phone-numbers', rateGroup: 'lookups', rateCost: costOf('phone_numbers') },
      // Checked before the rate limiter spends anything on the request.
      preValidation: async (request) => void valuesOf(request.body, 'phone_numbers'),
      schema: {
        summary: 'Look up to 1,000 phone numbers at once',
        description: 'Each value is answered as GET /api/phone-numbers/{number} would answer it (with `found`), or with its own error. Counts against the lookup limit per value.',
        operationId: 'lookupPhoneNumbers',
        tags: ['lookups'],
        body: Type.Ref('BulkPhoneNumberLookupRequest'),
        response: apiAnswers({ ok: { 200: { description: 'One answer per value, in order', schema: Type.Ref('BulkPhoneNumberLookupResponse') } }, ...errors }),
      },
    },
    async (request) => {
      const results = await services.lookups.phoneNumbers(principalOf(request).account, valuesOf(request.body, 'phone_numbers'));
      countBulkLookup(services.metrics, 'phone', results);
      return { results };
    },
  );

  app.post(
    '/ip-addresses/lookup',
    {
      config: { permission: 'read:ip-addresses', rateGroup: 'lookups', rateCost: costOf('ip_addresses') },
      preValidation: async (request) => void valuesOf(request.body, 'ip_addresses'),
      schema: {
        summary: 'Look up to 1,000 source addresses at once',
        description: 'Each value is answered as GET /api/ip-addresses/{address} would answer it (with `found`), or with its own error. Counts against the lookup limit per value.',
        operationId: 'lookupIpAddresses',
        tags: ['lookups'],
        body: Type.Ref('BulkIpAddressLookupRequest'),
        response: apiAnswers({ ok: { 200: { description: 'One answer per value, in order', schema: Type.Ref('BulkIpAddressLookupResponse') } }, ...errors }),
      },
    },
    async (request) => {
      const results = await services.lookups.ipAddresses(principalOf(request).account, valuesOf(request.body, 'ip_addresses'));
      countBulkLookup(services.metrics, 'ip', results);
      return { results };
    },
  );
}

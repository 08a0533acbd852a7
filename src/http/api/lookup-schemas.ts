import { Type, type TObject } from 'typebox';
import { MAX_BULK } from '../../domain/lookups/lookup-service.ts';
import { BulkItemError, IpAddressFound, IpAddressNotFound, PhoneNumberFound, PhoneNumberNotFound } from '../../domain/lookups/lookup-answers.ts';

/**
 * The lookups' requests and answers as the API documents them: the answers themselves are the
 * domain's schemas (domain/lookups/lookup-answers.ts), registered by name and shared by the single and
 * the bulk routes.
 */

/** The body of a bulk lookup: 1 to 1,000 values under one member. */
function bulkRequest($id: string, field: 'phone_numbers' | 'ip_addresses', example: string[]) {
  return Type.Object(
    { [field]: Type.Array(Type.String(), { minItems: 1, maxItems: MAX_BULK, description: 'The values; one that is not valid is answered with its own error' }) },
    { $id, example: { [field]: example } },
  );
}

/** One item of a bulk answer: the single lookup's answer, or the value's error. */
function bulkResult($id: string, found: TObject, notFound: TObject) {
  return Type.Union([Type.Ref(idOf(found)), Type.Ref(idOf(notFound)), Type.Ref(idOf(BulkItemError))], { $id });
}

/** The answer of a bulk lookup: one item per value, in order. */
function bulkResults($id: string, item: string, ...answers: [found: TObject, notFound: TObject]) {
  const example = answers.map((schema) => (schema as TObject & { example: unknown }).example);
  return Type.Object(
    {
      results: Type.Array(Type.Ref(item), {
        description: 'One answer per value, in order: the single lookup’s answer (with `found`), or the value’s error',
      }),
    },
    { $id, example: { results: example } },
  );
}

function idOf(schema: TObject): string {
  return (schema as TObject & { $id: string }).$id;
}

const BulkPhoneNumberLookupRequest = bulkRequest('BulkPhoneNumberLookupRequest', 'phone_numbers', ['+46812118532', '0046812118532']);
const BulkIpAddressLookupRequest = bulkRequest('BulkIpAddressLookupRequest', 'ip_addresses', ['203.0.113.7']);
const BulkPhoneNumberLookupResult = bulkResult('BulkPhoneNumberLookupResult', PhoneNumberFound, PhoneNumberNotFound);
const BulkIpAddressLookupResult = bulkResult('BulkIpAddressLookupResult', IpAddressFound, IpAddressNotFound);
const BulkPhoneNumberLookupResponse = bulkResults('BulkPhoneNumberLookupResponse', 'BulkPhoneNumberLookupResult', PhoneNumberFound, PhoneNumberNotFound);
const BulkIpAddressLookupResponse = bulkResults('BulkIpAddressLookupResponse', 'BulkIpAddressLookupResult', IpAddressFound, IpAddressNotFound);

/** Every named schema of the lookups, for the scope to register (a referenced one before those that refer to it). */
export const LOOKUP_SCHEMAS = [
  PhoneNumberFound,
  PhoneNumberNotFound,
  IpAddressFound,
  IpAddressNotFound,
  BulkItemError,
  BulkPhoneNumberLookupRequest,
  BulkIpAddressLookupRequest,
  BulkPhoneNumberLookupResult,
  BulkIpAddressLookupResult,
  BulkPhoneNumberLookupResponse,
  BulkIpAddressLookupResponse,
];

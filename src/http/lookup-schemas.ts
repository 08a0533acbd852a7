import { Type, type TObject } from 'typebox';
import { MAX_BULK } from '../domain/lookup-service.ts';
import { BulkItemError, IpAddressFound, IpAddressNotFound, PhoneNumberFound, PhoneNumberNotFound } from '../domain/lookup-answers.ts';

/**
 * The lookups' requests and answers as the API documents them: the answers themselves are the
 * domain's schemas (domain/lookup-answers.ts), registered by name and shared by the single and
 * the bulk routes.
 */

/** Every named schema of the lookups, for the scope to register. */
export const LOOKUP_SCHEMAS = [PhoneNumberFound, PhoneNumberNotFound, IpAddressFound, IpAddressNotFound, BulkItemError];

/** The body of a bulk lookup: 1 to 1,000 values under one member. */
export function bulkRequest(field: 'phone_numbers' | 'ip_addresses', example: string[]) {
  return Type.Object(
    { [field]: Type.Array(Type.String(), { minItems: 1, maxItems: MAX_BULK, description: 'The values; one that is not valid is answered with its own error' }) },
    { example: { [field]: example } },
  );
}

/** The answer of a bulk lookup: one item per value, in order. */
export function bulkResults(...answers: [found: TObject, notFound: TObject]) {
  const [found, notFound] = answers.map((schema) => schema as TObject & { $id: string; example: unknown });
  const example = [found!.example, notFound!.example];
  return Type.Object(
    {
      results: Type.Array(Type.Union([Type.Ref(found!.$id), Type.Ref(notFound!.$id), Type.Ref('BulkItemError')]), {
        description: 'One answer per value, in order: the single lookup’s answer (with `found`), or the value’s error',
      }),
    },
    { example: { results: example } },
  );
}

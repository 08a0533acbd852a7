import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { RANGE_PREFIX_LENGTH } from '../../domain/lookups/number-hash.ts';
import { RANGE_MAX_ENTRIES, RANGE_MIN_ENTRIES } from '../../domain/lookups/range-lookup.ts';
import type { Services } from '../../services.ts';
import { apiAnswers } from '../route-responses.ts';
import { principalOf } from './api-auth.ts';

/** What these routes use of the services. */
type RouteServices = Pick<Services, 'rangeLookups'>;

/** One number of a range, or padding. */
const PhoneNumberRangeEntry = Type.Object(
  {
    suffix: Type.String({ pattern: '^[0-9a-f]{59}$', description: 'The last 59 hex digits of a SHA-256, lower case' }),
    seen_count: Type.Integer({ minimum: 0, description: 'Events naming the number; 0 marks padding, which clients ignore' }),
    score: Type.Integer({ minimum: 0, maximum: 100, description: 'The number’s score (docs/scoring.md); 0 for padding' }),
    range_score: Type.Integer({ minimum: 0, maximum: 100, description: 'The score of the number’s range, its block of 100 (docs/scoring.md, "Ranges"); 0 for a number in none, and for padding' }),
  },
  { $id: 'PhoneNumberRangeEntry' },
);

const PhoneNumberRange = Type.Object(
  {
    prefix: Type.String({ pattern: '^[0-9a-f]{5}$', description: 'The prefix asked, lower case' }),
    entries: Type.Array(Type.Ref('PhoneNumberRangeEntry'), {
      description: `Every number of the range the caller may see, padded with random suffixes to ${RANGE_MIN_ENTRIES} entries (or the next power of two, at most ${RANGE_MAX_ENTRIES} real ones), in suffix order`,
    }),
  },
  {
    $id: 'PhoneNumberRange',
    example: {
      prefix: '71d81',
      entries: [
        { suffix: '65f6ef64ffb43998d96b0c881000dab0a459beabde52832b90773611018', seen_count: 0, score: 0, range_score: 0 },
        { suffix: '95b791393679230de7ea7087afb150651af83f2ed01b8d1cbcab1b8c532', seen_count: 4, score: 41, range_score: 48 },
      ],
    },
  },
);

/** The named schemas of the range lookup, for the /api scope to register. */
export const RANGE_LOOKUP_SCHEMAS = [PhoneNumberRangeEntry, PhoneNumberRange];

/** GET /api/phone-numbers/range/{prefix}: k-anonymous number lookups (docs/api.md §13). */
export async function rangeLookupRoutes(app: FastifyInstance, { services }: { services: RouteServices }) {
  app.get<{ Params: { prefix: string } }>(
    '/phone-numbers/range/:prefix',
    {
      config: { permission: 'read:phone-numbers', rateGroup: 'lookups', pathValue: { code: 'invalid_range_prefix', name: 'range prefix' } },
      schema: {
        summary: 'Numbers whose key’s SHA-256 begins with a prefix, without naming the number',
        description:
          'The caller hashes the normalised number key (E.164 `+…` for international forms) with SHA-256, sends the first 5 hex digits, and looks for the other 59 among the answer. Counted as one lookup.',
        operationId: 'lookupPhoneNumberRange',
        tags: ['lookups'],
        params: Type.Object({
          prefix: Type.String({ pattern: `^[0-9a-fA-F]{${RANGE_PREFIX_LENGTH}}$`, description: 'The first 5 hex digits of the SHA-256, any case', example: '71D81' }),
        }),
        response: apiAnswers({
          ok: { 200: { description: 'The range’s numbers and padding', schema: Type.Ref('PhoneNumberRange') } },
          errors: [400],
          limited: true,
          describe: { 400: 'Not 5 hexadecimal digits (`invalid_range_prefix`)' },
        }),
      },
    },
    async (request) => services.rangeLookups.phoneNumbers(principalOf(request).account, request.params.prefix),
  );
}

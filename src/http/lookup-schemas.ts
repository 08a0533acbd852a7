import { Type, type TObject } from 'typebox';
import { MAX_BULK } from '../domain/lookup-service.ts';
import { nullable } from './schemas.ts';

/**
 * The answers of the lookups (docs/api.md §7) as named schemas, shared by the single and the
 * bulk routes: a bulk result item is exactly a single lookup's answer, or the item's error.
 */

const seen = {
  seen_count: Type.Integer({ minimum: 1, description: 'Events that name it, across the scopes the caller reads' }),
  first_seen: Type.String({ description: 'Earliest event time (UTC, RFC 3339)', example: '2026-11-20T10:00:01.123456789Z' }),
  last_seen: Type.String({ description: 'Latest event time (UTC, RFC 3339)', example: '2026-11-22T06:25:32.91870802Z' }),
  score: Type.Integer({ minimum: 0, maximum: 100, description: 'How strongly the evidence, decayed by its age, points at toll fraud (docs/scoring.md)', example: 41 }),
  reasons: Type.Array(Type.String(), { description: 'The facts behind the score, strongest evidence first', example: ['called from 2 distinct source addresses', 'last seen today'] }),
};

export const PhoneNumberFound = Type.Object(
  {
    phone_number: Type.String({ description: 'The number as looked up, normalised', example: '+46812118532' }),
    found: Type.Literal(true),
    ...seen,
    source_ip_count: Type.Integer({ description: 'Distinct source addresses that dialled it' }),
    sip_methods: Type.Record(Type.String(), Type.Integer(), { description: 'Events per SIP method', example: { INVITE: 3, OPTIONS: 1 } }),
    matched_forms: Type.Array(Type.String(), { description: 'Written forms seen, most seen first, e.g. 0046…, +46…' }),
    e164: Type.Optional(Type.String({ description: 'The E.164 form, where the number parses as one' })),
    country: Type.Optional(nullable<string>(['string'], { description: 'ISO 3166-1 alpha-2 country of an E.164 number' })),
    number_type: Type.Optional(nullable<string>(['string'], { description: 'premium-rate, toll-free, mobile…' })),
    message: Type.String(),
  },
  {
    $id: 'PhoneNumberFound',
    description: 'Attackers tried to call this number',
    example: {
      phone_number: '+46812118532',
      found: true,
      seen_count: 4,
      first_seen: '2026-11-20T10:00:01.123456789Z',
      last_seen: '2026-11-22T06:25:32.91870802Z',
      score: 41,
      reasons: ['called from 2 distinct source addresses', 'seen by 1 honeypot node', '3 INVITE attempts, not only OPTIONS scans', 'seen 4 times', 'last seen today'],
      source_ip_count: 2,
      sip_methods: { INVITE: 3, OPTIONS: 1 },
      matched_forms: ['0046812118532', '+46812118532'],
      e164: '+46812118532',
      country: 'SE',
      number_type: 'fixed-line',
      message: 'Attackers have tried to call this number 4 times.',
    },
  },
);

export const PhoneNumberNotFound = Type.Object(
  { phone_number: Type.String(), found: Type.Literal(false), message: Type.String() },
  {
    $id: 'PhoneNumberNotFound',
    description: 'Never seen in the scopes the caller reads',
    example: { phone_number: '+441632960001', found: false, message: 'No probes to this number have been seen.' },
  },
);

export const IpAddressFound = Type.Object(
  {
    ip_address: Type.String({ description: 'The address in canonical form', example: '203.0.113.7' }),
    found: Type.Literal(true),
    ...seen,
    called_number_count: Type.Integer({ description: 'Distinct numbers it dialled' }),
    user_agents: Type.Array(Type.Object({ user_agent: Type.String(), count: Type.Integer() }), { description: 'Most seen User-Agents, at most 10' }),
    transports: Type.Record(Type.String(), Type.Integer(), { description: 'Events per transport', example: { UDP: 4 } }),
    message: Type.String(),
  },
  {
    $id: 'IpAddressFound',
    description: 'This address probed honeypots',
    example: {
      ip_address: '203.0.113.7',
      found: true,
      seen_count: 4,
      first_seen: '2026-11-20T10:00:01.123456789Z',
      last_seen: '2026-11-22T06:25:32.91870802Z',
      score: 28,
      reasons: ['dialled 3 distinct numbers', 'seen by 1 honeypot node', 'sent 4 probes', 'last seen today'],
      called_number_count: 3,
      user_agents: [{ user_agent: 'friendly-scanner', count: 4 }],
      transports: { UDP: 4 },
      message: 'This address has sent 4 probes.',
    },
  },
);

export const IpAddressNotFound = Type.Object(
  { ip_address: Type.String(), found: Type.Literal(false), message: Type.String() },
  {
    $id: 'IpAddressNotFound',
    description: 'Never seen in the scopes the caller reads',
    example: { ip_address: '192.0.2.1', found: false, message: 'No probes from this address have been seen.' },
  },
);

/** A bulk item that could not be looked up: the value as sent, and why. */
export const BulkItemError = Type.Object(
  {
    input: nullable<string | number | boolean>(['string', 'number', 'boolean'], { description: 'The value as sent; null for an array or object' }),
    error: Type.Union([Type.Literal('invalid_phone_number'), Type.Literal('invalid_ip_address')]),
    message: Type.String(),
  },
  { $id: 'BulkItemError', example: { input: 'x!y', error: 'invalid_phone_number', message: 'not a phone number' } },
);

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

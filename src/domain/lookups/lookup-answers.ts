import { Type, type Static } from 'typebox';
import { nullable } from '../nullable-schema.ts';

/**
 * The answers of the lookups (docs/api.md §7), written once as JSON Schema: the domain's answer
 * types are derived from them (Static), and the API documents and serialises its answers with
 * them (http/api/lookup-schemas.ts), so the two cannot drift apart. A bulk result item is exactly a
 * single lookup's answer, or the item's error.
 */

/**
 * On an answer about a value the caller's own allowlist holds (docs/api.md §16): present only
 * then, so every other answer is as it was. The evidence beside them is unchanged.
 */
const allowlisted = {
  allowlisted: Type.Optional(Type.Literal(true, { description: "The value is on the caller's own allowlist: do not block it. Present only then" })),
  allowlist_entry: Type.Optional(
    Type.Object(
      {
        id: Type.String({ format: 'uuid' }),
        kind: Type.Union([Type.Literal('phone_number'), Type.Literal('number_prefix'), Type.Literal('ip_address'), Type.Literal('ip_range')]),
        value: Type.String({ description: 'The entry as normalised: a number key or prefix, an address, a range in CIDR notation' }),
      },
      { description: 'The entry that allowlists it, the most specific when several do; present with `allowlisted`' },
    ),
  ),
};

/**
 * What this server's peers said of a value (docs/federation.md): on a found answer, present only
 * when a peer's live indicator names the value, so every other answer is as it was.
 */
export const PeerEvidenceAnswer = Type.Object(
  {
    score: Type.Integer({ minimum: 0, maximum: 100, description: 'The peers’ part alone: 100 × (1 − Π(1 − trust × confidence / 100)) (docs/scoring.md, "Peers")' }),
    sightings: Type.Array(
      Type.Object({
        peer: Type.String({ description: 'The peer’s name, as the operator named it' }),
        confidence: Type.Integer({ minimum: 0, maximum: 100, description: 'The confidence the peer published (the highest of its live indicators of the value)' }),
        trust: Type.Number({ minimum: 0, maximum: 1, description: 'The trust this server’s operator gives the peer' }),
        points: Type.Integer({ minimum: 0, maximum: 100, description: 'trust × confidence: the most this peer adds to the score' }),
        valid_from: Type.String({ description: 'The peer’s `valid_from` (a Tollwatch peer’s first sighting)' }),
        valid_until: Type.Optional(Type.String({ description: 'When the peer’s say ends; absent when it set no end' })),
      }),
      { description: 'One per peer, strongest first' },
    ),
  },
  { description: 'What peers said of the value (docs/federation.md); present only when one did' },
);

const seen = {
  seen_count: Type.Integer({ minimum: 0, description: 'Events that name it, across the scopes the caller reads; 0 when only peers know it (`peers`)' }),
  first_seen: Type.String({ description: 'Earliest event time (UTC, RFC 3339); for a value only peers know, their earliest `valid_from`', example: '2026-11-20T10:00:01.123456789Z' }),
  last_seen: Type.String({ description: 'Latest event time (UTC, RFC 3339); for a value only peers know, their latest `modified`', example: '2026-11-22T06:25:32.91870802Z' }),
  score: Type.Integer({ minimum: 0, maximum: 100, description: 'How strongly the evidence, decayed by its age, points at toll fraud (docs/scoring.md), peers’ included', example: 41 }),
  reasons: Type.Array(Type.String(), { description: 'The facts behind the score, strongest evidence first', example: ['called from 2 distinct source addresses', 'last seen today'] }),
  local_score: Type.Optional(Type.Integer({ minimum: 0, maximum: 100, description: 'With `peers`: the score of this server’s own evidence alone' })),
  peers: Type.Optional(PeerEvidenceAnswer),
};

/**
 * A number's range and its evidence (docs/scoring.md, "Ranges"): on every phone-number answer,
 * found or not, whose range has evidence the caller may see.
 */
export const NumberRangeEvidence = Type.Object(
  {
    prefix: Type.String({ description: 'The range: the number key less its last two digits, a block of 100 numbers', example: '+468121185' }),
    numbers_seen: Type.Integer({ minimum: 1, description: 'Distinct numbers of the range seen, across the scopes the caller reads', example: 3 }),
    score: Type.Integer({ minimum: 0, maximum: 100, description: 'How strongly the range’s evidence, decayed by its age, points at toll fraud (docs/scoring.md, "Ranges")', example: 52 }),
    reasons: Type.Array(Type.String(), { description: 'The facts behind the range’s score, strongest evidence first', example: ['3 distinct numbers of the range seen', 'last seen today'] }),
  },
  { description: 'The evidence of the number’s range (a block of 100); absent when the number has no range or the range has none the caller may see' },
);

const range = Type.Optional(NumberRangeEvidence);

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
    range,
    ...allowlisted,
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
  { phone_number: Type.String(), found: Type.Literal(false), message: Type.String(), range, ...allowlisted },
  {
    $id: 'PhoneNumberNotFound',
    description: 'Never seen in the scopes the caller reads; `range` when its range has evidence (docs/scoring.md, "Ranges": act on `range.score`)',
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
    tags: Type.Array(Type.String(), {
      description: 'The scanning tools those User-Agents name (docs/scoring.md, "Tags"): what the header claims, empty when it names none',
      example: ['sipvicious'],
    }),
    transports: Type.Record(Type.String(), Type.Integer(), { description: 'Events per transport', example: { UDP: 4 } }),
    message: Type.String(),
    ...allowlisted,
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
      tags: ['sipvicious'],
      transports: { UDP: 4 },
      message: 'This address has sent 4 probes.',
    },
  },
);

export const IpAddressNotFound = Type.Object(
  { ip_address: Type.String(), found: Type.Literal(false), message: Type.String(), ...allowlisted },
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

/**
 * On a found answer: the part every answer worked out from the same kept aggregate shares (all
 * of it but the value as the caller wrote it), the same object for as long as the cache keeps
 * that aggregate. What a caller derives from that part alone it may keep by this object (the
 * direct lane keeps its JSON). A symbol, so JSON and the schema serializers leave it out.
 */
export const SHARED_PART = Symbol('tollwatch.answerSharedPart');

/** What peers said of a value, as an answer carries it. */
export type PeerEvidenceAnswer = Static<typeof PeerEvidenceAnswer>;

/** A number range's evidence as an answer carries it. */
export type NumberRangeEvidence = Static<typeof NumberRangeEvidence>;

/** The answer to "have attackers tried to call this number?" (docs/api.md §7). */
export type PhoneNumberAnswer = (Static<typeof PhoneNumberFound> & { [SHARED_PART]?: object }) | Static<typeof PhoneNumberNotFound>;

/** The answer for a source address. */
export type IpAddressAnswer = (Static<typeof IpAddressFound> & { [SHARED_PART]?: object }) | Static<typeof IpAddressNotFound>;

/** A bulk item that could not be looked up. */
export type BulkItemError = Static<typeof BulkItemError>;

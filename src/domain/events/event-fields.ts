/**
 * The 13 fields of a honeypot event (docs/api.md §5), said once: the validator, the domain types,
 * the OpenAPI schemas and the store's row mapping are derived from this table, so that what the
 * service documents and what it accepts cannot drift apart.
 */

/** Values of `collected_method`, also the query filter's allowed values. */
export const COLLECTED_METHODS = ['responsive', 'passive'] as const;
/** Values of `transport_type`, also the query filter's allowed values. */
export const TRANSPORT_TYPES = ['UDP', 'TCP', 'TLS'] as const;

/**
 * What a SentryPeer node writes in a text field its probe did not carry: it never sends an empty
 * `called_number` or `sip_user_agent`, it sends this (test/fixtures/sentrypeer_json.log). Stored
 * as sent, but read as absent: never a number, never a user agent (docs/api.md §5).
 */
export const ABSENT_MARKER = 'NOT_FOUND';

/** Whether a free-text value says "absent": empty, or a node's marker for it. */
export function isAbsentValue(value: string): boolean {
  return value === '' || value === ABSENT_MARKER;
}

/** The longest SIP method accepted: RFC 3261 sets no bound, the contract does. */
export const SIP_METHOD_MAX_CHARS = 32;

/** The syntaxes a field may be bound to beyond "text". */
export type EventFieldFormat = 'timestamp' | 'uuid' | 'ip' | 'sip-token';

/** A field's bound: in characters (Unicode code points, as JSON Schema's maxLength counts), or in UTF-8 bytes. */
export type LengthBound = { readonly chars: number } | { readonly bytes: number };

/** One row of the table. */
export interface EventFieldSpec {
  /** The JSON member, and the events column of the same name. */
  readonly name: string;
  /** What the field holds, for people reading the API documentation. */
  readonly description: string;
  /** A value a real node sends. */
  readonly example: string;
  /** Whether "" is a value: probes legitimately lack a user part or a User-Agent. */
  readonly mayBeEmpty: boolean;
  /** The bound of the text, checked before its format; a format may bound it further. */
  readonly maxLength: LengthBound;
  /** The closed set of values, where the field has one. */
  readonly values?: readonly string[];
  /** The syntax the value must have, where it has one. */
  readonly format?: EventFieldFormat;
}

/** The bound of every field but `sip_message`, which is bounded in bytes. */
const TEXT: LengthBound = { chars: 1024 };

const TABLE = [
  { name: 'app_name', description: 'Application that sent the event', example: 'sentrypeer', mayBeEmpty: false, maxLength: TEXT },
  { name: 'app_version', description: 'Version of that application', example: '4.0.6', mayBeEmpty: false, maxLength: TEXT },
  {
    name: 'event_timestamp',
    description: 'Time of the probe; at most 24 hours after the server’s clock',
    example: '2022-02-22 11:19:15.848934346',
    mayBeEmpty: false,
    maxLength: TEXT,
    format: 'timestamp',
  },
  {
    name: 'event_uuid',
    description: 'UUID of the event, unique per account',
    example: '891da16a-56b1-497f-abef-ca3a2a849bea',
    mayBeEmpty: false,
    maxLength: TEXT,
    format: 'uuid',
  },
  {
    name: 'created_by_node_id',
    description: 'UUID of the honeypot node',
    example: '732e7f50-637d-4fde-81e0-5c32f1bb5a92',
    mayBeEmpty: false,
    maxLength: TEXT,
    format: 'uuid',
  },
  {
    name: 'collected_method',
    description: 'How the honeypot collected the probe',
    example: 'responsive',
    mayBeEmpty: false,
    maxLength: TEXT,
    values: COLLECTED_METHODS,
  },
  {
    name: 'transport_type',
    description: 'Transport the probe arrived over',
    example: 'UDP',
    mayBeEmpty: false,
    maxLength: TEXT,
    values: TRANSPORT_TYPES,
  },
  { name: 'source_ip', description: 'Address of the attacker', example: '203.0.113.7', mayBeEmpty: false, maxLength: TEXT, format: 'ip' },
  { name: 'destination_ip', description: 'Address of the honeypot', example: '198.51.100.2', mayBeEmpty: false, maxLength: TEXT, format: 'ip' },
  {
    name: 'called_number',
    description: 'Number the attacker tried to call, as written; empty when the probe named none',
    example: '0046812118532',
    mayBeEmpty: true,
    maxLength: TEXT,
  },
  { name: 'sip_method', description: 'SIP method of the probe', example: 'INVITE', mayBeEmpty: false, maxLength: TEXT, format: 'sip-token' },
  {
    name: 'sip_user_agent',
    description: 'SIP User-Agent of the probe; empty when it sent none',
    example: 'friendly-scanner',
    mayBeEmpty: true,
    maxLength: TEXT,
  },
  {
    name: 'sip_message',
    description: 'The full SIP message',
    example: 'INVITE sip:0046812118532@198.51.100.2 SIP/2.0\r\n…',
    mayBeEmpty: false,
    maxLength: { bytes: 65_535 },
  },
] as const satisfies readonly EventFieldSpec[];

/** The name of one of the 13 fields. */
export type EventField = (typeof TABLE)[number]['name'];

/** The table, in the specification's order. */
export const EVENT_FIELD_SPECS: ReadonlyArray<EventFieldSpec & { readonly name: EventField }> = TABLE;

/** The 13 field names, in the specification's order (the content hash depends on it). */
export const EVENT_FIELDS: readonly EventField[] = EVENT_FIELD_SPECS.map((spec) => spec.name);

/** The 13 fields of anything that has them, and nothing else (a row, an answer). */
export function eventFieldsOf(source: Readonly<Record<EventField, string>>): Record<EventField, string> {
  const fields = {} as Record<EventField, string>;
  for (const field of EVENT_FIELDS) fields[field] = source[field];
  return fields;
}

/**
 * What a syntax means, and its ECMA-262 pattern without flags (as JSON Schema writes one) for
 * documents to state it; the domain's own checks (event-timestamp.ts, uuid.ts, ip-address.ts)
 * decide, and test/domain/event-fields.test.ts holds the two to agreement. A pattern cannot say
 * that a date exists or where the year lies: those are in the description only.
 */
export interface FormatRule {
  readonly description: string;
  readonly pattern: string;
  /** A bound tighter than the field's, where the syntax has one. */
  readonly maxChars?: number;
}

const DATE = `[0-9]{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])`;
const TIME = `(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\\.[0-9]{1,9})?`;
const OFFSET = `(?:[Zz]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])`;
const HEX = '[0-9A-Fa-f]';
// A strict dotted quad: no leading zeros, which other tools read as octal.
const OCTET = `(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])`;
const IPV4 = `${OCTET}(?:\\.${OCTET}){3}`;
const H16 = `${HEX}{1,4}`;
const LS32 = `(?:${H16}:${H16}|${IPV4})`;
/** The part before a `::`: none, or up to n + 1 groups. */
const upTo = (n: number) => (n === 0 ? `(?:${H16})?` : `(?:(?:${H16}:){0,${n}}${H16})?`);
// RFC 3986 §3.2.2 IPv6address, line by line; no zone (`%eth0`), prefix or brackets.
const IPV6 = [
  `(?:${H16}:){6}${LS32}`,
  `::(?:${H16}:){5}${LS32}`,
  `${upTo(0)}::(?:${H16}:){4}${LS32}`,
  `${upTo(1)}::(?:${H16}:){3}${LS32}`,
  `${upTo(2)}::(?:${H16}:){2}${LS32}`,
  `${upTo(3)}::${H16}:${LS32}`,
  `${upTo(4)}::${LS32}`,
  `${upTo(5)}::${H16}`,
  `${upTo(6)}::`,
].join('|');

/** Each format's meaning and pattern. */
export const FORMAT_RULES: Readonly<Record<EventFieldFormat, FormatRule>> = {
  timestamp: {
    description:
      '`YYYY-MM-DD HH:MM:SS` (UTC) or RFC 3339, with 0-9 fractional digits; the date must exist, and be in 1970 or later in UTC',
    pattern: `^${DATE}(?: ${TIME}|[Tt]${TIME}${OFFSET})$`,
  },
  uuid: {
    description: 'UUID written 8-4-4-4-12 in hexadecimal digits, any version, any case',
    pattern: `^${HEX}{8}-${HEX}{4}-${HEX}{4}-${HEX}{4}-${HEX}{12}$`,
  },
  ip: {
    description: 'IPv4 dotted quad without leading zeros, or IPv6 text without zone or prefix',
    pattern: `^(?:${IPV4}|${IPV6})$`,
  },
  'sip-token': {
    description: 'RFC 3261 token',
    // RFC 3261 §25.1 `token`.
    pattern: "^[A-Za-z0-9.!%*_+`'~-]+$",
    maxChars: SIP_METHOD_MAX_CHARS,
  },
};

/**
 * What every field without a format is: text without NUL (PostgreSQL text cannot hold it) or
 * unpaired surrogates (the stores would replace them, so the stored event would differ from
 * the one hashed). The pattern means the same whether or not the regex runs in Unicode mode.
 */
export const TEXT_RULE: FormatRule = {
  description: 'Text without NUL characters or unpaired UTF-16 surrogates',
  pattern: '^(?:[^\\u0000\\uD800-\\uDFFF]|[\\uD800-\\uDBFF][\\uDC00-\\uDFFF])*$',
};

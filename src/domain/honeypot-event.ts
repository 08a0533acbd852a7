import { createHash } from 'node:crypto';
import { parseEventTimestamp } from './event-timestamp.ts';
import type { FieldError } from './field-error.ts';
import { canonicalIpAddress } from './ip-address.ts';
import { normalisePhoneNumber } from './phone-number.ts';
import { canonicalUuid } from './uuid.ts';

/** The 13 fields of a honeypot event, in the specification's order. */
export const EVENT_FIELDS = [
  'app_name',
  'app_version',
  'event_timestamp',
  'event_uuid',
  'created_by_node_id',
  'collected_method',
  'transport_type',
  'source_ip',
  'destination_ip',
  'called_number',
  'sip_method',
  'sip_user_agent',
  'sip_message',
] as const;

export type EventField = (typeof EVENT_FIELDS)[number];

/** A valid event as stored: canonical UUIDs and addresses, everything else as received. */
export interface HoneypotEvent extends Record<EventField, string> {
  /** Normalised instant of `event_timestamp`. */
  event_time: string;
  /** `called_number` normalised, and its lookup key; null when it is empty or not a number. */
  number_written: string | null;
  number_key: string | null;
  /** Hash of the 13 stored values: tells an identical replay from a conflicting reuse of a uuid. */
  content_hash: string;
}

/** Fields probes legitimately leave empty: no user part, no User-Agent. */
const MAY_BE_EMPTY = new Set<EventField>(['called_number', 'sip_user_agent']);
const MAX_FIELD_CHARS = 1024;
const MAX_SIP_MESSAGE_BYTES = 65_535;
const MAX_SIP_METHOD_CHARS = 32;
// RFC 3261 §25.1 `token`.
const SIP_TOKEN = /^[A-Za-z0-9\-.!%*_+`'~]+$/;

/** Values of `collected_method` and `transport_type`, also the filters' allowed values. */
export const COLLECTED_METHODS = ['responsive', 'passive'] as const;
export const TRANSPORT_TYPES = ['UDP', 'TCP', 'TLS'] as const;

/** Why a value is no `sip_method` (a SIP token of at most 32 characters), or undefined. */
export function sipMethodError(value: string): string | undefined {
  return value.length <= MAX_SIP_METHOD_CHARS && SIP_TOKEN.test(value)
    ? undefined
    : `must be a SIP method token of at most ${MAX_SIP_METHOD_CHARS} characters`;
}

/** A field's verdict: its stored value (and anything derived on the way), or why it is refused. */
type Check = (value: string, now: Date) => { value: string; derived?: string } | { error: string };

const enumeration =
  (...allowed: string[]): Check =>
  (value) =>
    allowed.includes(value) ? { value } : { error: `must be one of: ${allowed.join(', ')}` };

const uuid: Check = (value) => {
  const canonical = canonicalUuid(value);
  return canonical ? { value: canonical } : { error: 'must be a UUID (8-4-4-4-12 hexadecimal digits)' };
};

const ipAddress: Check = (value) => {
  const canonical = canonicalIpAddress(value);
  return canonical ? { value: canonical } : { error: 'must be an IPv4 or IPv6 address' };
};

/** The rule of each field beyond "a string of acceptable length". */
const CHECKS: Partial<Record<EventField, Check>> = {
  event_timestamp: (value, now) => {
    const parsed = parseEventTimestamp(value, now);
    return 'error' in parsed ? parsed : { value, derived: parsed.iso };
  },
  event_uuid: uuid,
  created_by_node_id: uuid,
  collected_method: enumeration(...COLLECTED_METHODS),
  transport_type: enumeration(...TRANSPORT_TYPES),
  source_ip: ipAddress,
  destination_ip: ipAddress,
  sip_method: (value) => {
    const error = sipMethodError(value);
    return error ? { error } : { value };
  },
};

/**
 * Validates a submitted body against docs/api.md §5, naming every bad field at once. Unknown
 * extra fields are ignored and dropped.
 */
export function validateHoneypotEvent(body: unknown, now: Date): { ok: true; event: HoneypotEvent } | { ok: false; errors: FieldError[] } {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return { ok: false, errors: [{ field: '(body)', message: 'must be a JSON object' }] };
  }
  const input = body as Record<string, unknown>;
  const errors: FieldError[] = [];
  const stored = {} as Record<EventField, string>;
  let eventTime = '';

  for (const field of EVENT_FIELDS) {
    const value = Object.hasOwn(input, field) ? input[field] : undefined;
    const error = lengthError(field, value);
    if (error) {
      errors.push({ field, message: error });
      continue;
    }
    const check = CHECKS[field];
    const result = check ? check(value as string, now) : { value: value as string };
    if ('error' in result) errors.push({ field, message: result.error });
    else {
      stored[field] = result.value;
      if (field === 'event_timestamp') eventTime = result.derived ?? '';
    }
  }
  if (errors.length > 0) return { ok: false, errors };
  const number = stored.called_number === '' ? null : normalisePhoneNumber(stored.called_number);
  return {
    ok: true,
    event: {
      ...stored,
      event_time: eventTime,
      number_written: number?.written ?? null,
      number_key: number?.key ?? null,
      content_hash: createHash('sha256')
        .update(JSON.stringify(EVENT_FIELDS.map((f) => stored[f])))
        .digest('hex'),
    },
  };
}

function lengthError(field: EventField, value: unknown): string | undefined {
  if (value === undefined) return 'is required';
  if (typeof value !== 'string') return 'must be a string';
  // PostgreSQL text cannot hold NUL, and no SIP text needs it: refused alike on every store.
  if (value.includes('\u0000')) return 'must not contain NUL characters';
  // A lone surrogate is no character: the stores would write U+FFFD in its place, so the
  // stored event would differ from the one its content hash was computed on.
  if (!value.isWellFormed()) return 'must be valid Unicode text (it holds an unpaired UTF-16 surrogate)';
  if (value.length === 0 && !MAY_BE_EMPTY.has(field)) return 'must not be empty';
  if (field === 'sip_message') {
    // Cheap bound first: a UTF-8 character is at most 3 bytes per UTF-16 unit.
    if (value.length * 3 > MAX_SIP_MESSAGE_BYTES && Buffer.byteLength(value, 'utf8') > MAX_SIP_MESSAGE_BYTES) {
      return `must be at most ${MAX_SIP_MESSAGE_BYTES} bytes`;
    }
  } else if (value.length > MAX_FIELD_CHARS && characterCount(value) > MAX_FIELD_CHARS) {
    // Cheap bound first: a string of at most that many UTF-16 units has at most that many characters.
    return `must be at most ${MAX_FIELD_CHARS} characters`;
  }
  return undefined;
}

/**
 * Characters (Unicode code points) of a well-formed string. `length` counts UTF-16 units, so
 * an emoji outside the Basic Multilingual Plane would count twice: each surrogate pair is one.
 */
function characterCount(value: string): number {
  let count = value.length;
  for (let i = 0; i < value.length; i++) {
    const unit = value.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff) count -= 1;
  }
  return count;
}

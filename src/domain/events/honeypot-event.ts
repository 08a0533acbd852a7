import { createHash } from 'node:crypto';
import {
  EVENT_FIELD_SPECS,
  EVENT_FIELDS,
  FORMAT_RULES,
  isAbsentValue,
  SIP_METHOD_MAX_CHARS,
  type EventField,
  type EventFieldFormat,
  type EventFieldSpec,
} from './event-fields.ts';
import { parseEventTimestamp } from './event-timestamp.ts';
import type { FieldError } from '../field-error.ts';
import { canonicalIpAddress } from '../ip-address.ts';
import { normalisePhoneNumber } from '../phone-number.ts';
import { canonicalUuid } from '../uuid.ts';

/** A valid event as stored: canonical UUIDs and addresses, everything else as received. */
export interface HoneypotEvent extends Record<EventField, string> {
  /** Normalised instant of `event_timestamp`. */
  event_time: string;
  /** `called_number` normalised, and its lookup key; null when it is absent (§5) or not a number. */
  number_written: string | null;
  number_key: string | null;
  /** Hash of the 13 stored values: tells an identical replay from a conflicting reuse of a uuid. */
  content_hash: string;
}

const SIP_TOKEN = new RegExp(FORMAT_RULES['sip-token'].pattern);

/** Why a value is no `sip_method` (a SIP token of at most 32 characters), or undefined. */
export function sipMethodError(value: string): string | undefined {
  return value.length <= SIP_METHOD_MAX_CHARS && SIP_TOKEN.test(value)
    ? undefined
    : `must be a SIP method token of at most ${SIP_METHOD_MAX_CHARS} characters`;
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

const sipMethod: Check = (value) => {
  const error = sipMethodError(value);
  return error ? { error } : { value };
};

const timestamp: Check = (value, now) => {
  const parsed = parseEventTimestamp(value, now);
  return 'error' in parsed ? parsed : { value, derived: parsed.iso };
};

const FORMAT_CHECKS: Record<EventFieldFormat, Check> = { timestamp, uuid, ip: ipAddress, 'sip-token': sipMethod };

/** The rule of a field beyond "a string of acceptable length", from the table; none for free text. */
function checkOf(spec: EventFieldSpec): Check | undefined {
  if (spec.values) return enumeration(...spec.values);
  return spec.format ? FORMAT_CHECKS[spec.format] : undefined;
}

/** Each field's row of the table and its check, in the specification's order. */
const FIELD_RULES = EVENT_FIELD_SPECS.map((spec) => ({ spec, check: checkOf(spec) }));

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

  for (const { spec, check } of FIELD_RULES) {
    const field = spec.name;
    const value = Object.hasOwn(input, field) ? input[field] : undefined;
    const error = lengthError(spec, value);
    if (error) {
      errors.push({ field, message: error });
      continue;
    }
    const result = check ? check(value as string, now) : { value: value as string };
    if ('error' in result) errors.push({ field, message: result.error });
    else {
      stored[field] = result.value;
      if (field === 'event_timestamp') eventTime = result.derived ?? '';
    }
  }
  if (errors.length > 0) return { ok: false, errors };
  const number = isAbsentValue(stored.called_number) ? null : normalisePhoneNumber(stored.called_number);
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

function lengthError(spec: EventFieldSpec, value: unknown): string | undefined {
  if (value === undefined) return 'is required';
  if (typeof value !== 'string') return 'must be a string';
  // PostgreSQL text cannot hold NUL, and no SIP text needs it: refused alike on every store.
  if (value.includes('\u0000')) return 'must not contain NUL characters';
  // A lone surrogate is no character: the stores would write U+FFFD in its place, so the
  // stored event would differ from the one its content hash was computed on.
  if (!value.isWellFormed()) return 'must be valid Unicode text (it holds an unpaired UTF-16 surrogate)';
  if (value.length === 0 && !spec.mayBeEmpty) return 'must not be empty';
  const bound = spec.maxLength;
  if ('bytes' in bound) {
    // Cheap bound first: a UTF-8 character is at most 3 bytes per UTF-16 unit.
    if (value.length * 3 > bound.bytes && Buffer.byteLength(value, 'utf8') > bound.bytes) {
      return `must be at most ${bound.bytes} bytes`;
    }
  } else if (value.length > bound.chars && characterCount(value) > bound.chars) {
    // Cheap bound first: a string of at most that many UTF-16 units has at most that many characters.
    return `must be at most ${bound.chars} characters`;
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

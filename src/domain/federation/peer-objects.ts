import { canonicalIpAddress } from '../ip-address.ts';
import { normalisePhoneNumber } from '../phone-number.ts';
import { STIX_NUMBER_TYPE } from '../intelligence/stix-indicators.ts';

/**
 * What this server makes of one object a peer's collection served (docs/federation.md, "What is
 * read"): an indicator of one number or one address it keeps, an object it skips (anything but
 * such an indicator, well formed), or one it refuses (malformed or hostile). A peer is another
 * organisation's server: every field is checked before anything of it is kept.
 */
export type ObjectVerdict = { verdict: 'accepted'; indicator: PeerIndicator } | { verdict: 'skipped'; why: string } | { verdict: 'refused'; why: string };

/** The TLP levels as stored: TLP 1.0's WHITE is TLP 2.0's CLEAR. */
export type TlpLevel = 'clear' | 'green' | 'amber' | 'amber+strict' | 'red';

/** One version of a peer's indicator as kept in `peer_indicators` (docs/federation.md, "What is kept"). */
export interface PeerIndicator {
  objectId: string;
  kind: 'number' | 'ip';
  /** A number key (normalisePhoneNumber) or a canonical address (canonicalIpAddress). */
  value: string;
  /** STIX's `confidence`, 0–100; DEFAULT_CONFIDENCE when the peer gives none. */
  confidence: number;
  /** ISO 8601 instants, as `Date#toISOString` writes them. */
  validFrom: string;
  modified: string;
  validUntil: string | null;
  revoked: boolean;
  tlp: TlpLevel | null;
}

/** The confidence of an indicator that states none: STIX 2.1 (§3.2) leaves it unknown; the middle of the scale, neither raising nor lowering. */
export const DEFAULT_CONFIDENCE = 50;

/** The fixed marking-definition ids of TLP 1.0 (STIX 2.1 §7.2.1.4) and of TLP 2.0 (FIRST's, as OASIS publishes them). */
export const TLP_MARKINGS: Readonly<Record<string, TlpLevel>> = {
  'marking-definition--613f2e26-407d-48c7-9eca-b8e91df99dc9': 'clear',
  'marking-definition--34098fce-860f-48ae-8e50-ebd3cc5e41da': 'green',
  'marking-definition--f88d31f6-486f-44da-b317-01333bde0b82': 'amber',
  'marking-definition--5e57c739-391a-4eb3-b6be-7d15ca92d5ed': 'red',
  'marking-definition--94868c89-83c2-464b-929b-a1a8aa3c8487': 'clear',
  'marking-definition--bab4a63c-aed9-4cf5-a766-dfca5abac2bb': 'green',
  'marking-definition--55d920b0-5e8b-4f79-9ee9-91f868d9b421': 'amber',
  'marking-definition--939a9414-2ddd-4d32-a0cd-375ea402b003': 'amber+strict',
  'marking-definition--e828b379-4e03-4974-9ac4-e53a884c97c1': 'red',
};
/** Several TLP markings on one object: the strictest holds. */
const TLP_ORDER: readonly TlpLevel[] = ['clear', 'green', 'amber', 'amber+strict', 'red'];

/** Bounds on one object, far above what an indicator needs and far below what would cost memory. */
const MAX_STRING = 16_384;
const MAX_PATTERN = 1024;
const MAX_NODES = 2000;
const MAX_DEPTH = 16;
const MAX_MARKINGS = 64;
/** Keys that turn a merge or a lookup into an attack on the prototype chain: never from a peer. */
const HOSTILE_KEYS = new Set(['__proto__', 'constructor', 'prototype']);
/** STIX 2.1 §2.9: `type--UUID` (hex of either case, as the STIX JSON schemas' pattern allows). */
const IDENTIFIER = /^([a-z][a-z0-9-]{1,248}[a-z0-9])--[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
/** STIX 2.1 §3.2 timestamps: RFC 3339 in UTC, with any fraction of a second. */
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$/;
/**
 * The one comparison this server reads: `[type:value = 'literal']`, nothing before or after (no
 * qualifier, no AND or OR, no second observation). A literal escapes `'` and `\` with `\`.
 */
const SINGLE_EQUALITY = /^\[\s*([a-z0-9-]+):value\s*=\s*'((?:[^'\\]|\\['\\])*)'\s*\]$/;
/** The object types of a number: ours, and OpenCTI's Phone-Number observable (its connectors write `[phone-number:value = '…']`). */
const NUMBER_TYPES = new Set([STIX_NUMBER_TYPE, 'phone-number']);

/** Reads one object of an envelope's `objects`. */
export function readPeerObject(object: unknown): ObjectVerdict {
  if (typeof object !== 'object' || object === null || Array.isArray(object)) return refused('not a JSON object');
  const hostile = hostility(object);
  if (hostile) return refused(hostile);
  const o = object as Record<string, unknown>;
  if (typeof o.type !== 'string' || typeof o.id !== 'string') return refused('no type or id');
  const id = IDENTIFIER.exec(o.id);
  if (!id || id[1] !== o.type) return refused('an id that is not the STIX identifier of its type');
  if (o.type !== 'indicator') return skipped(`a ${o.type}, not an indicator`);
  if (o.spec_version !== '2.1') return refused('an indicator that is not STIX 2.1');
  const created = instant(o.created);
  const modified = instant(o.modified);
  const validFrom = instant(o.valid_from);
  if (!created || !modified || !validFrom) return refused('an indicator without valid created, modified and valid_from timestamps');
  if (modified < created) return refused('an indicator modified before it was created');
  let validUntil: string | null = null;
  if (o.valid_until !== undefined) {
    validUntil = instant(o.valid_until) ?? null;
    if (!validUntil) return refused('an indicator whose valid_until is not a timestamp');
    if (validUntil <= validFrom) return refused('an indicator valid until before it is valid from');
  }
  let confidence = DEFAULT_CONFIDENCE;
  if (o.confidence !== undefined) {
    if (typeof o.confidence !== 'number' || !Number.isInteger(o.confidence) || o.confidence < 0 || o.confidence > 100) return refused('a confidence that is not a whole number from 0 to 100');
    confidence = o.confidence;
  }
  if (o.revoked !== undefined && typeof o.revoked !== 'boolean') return refused('a revoked that is not true or false');
  const tlp = tlpOf(o.object_marking_refs);
  if (tlp === false) return refused('object_marking_refs that are not a list of marking-definition ids');
  if (typeof o.pattern !== 'string' || typeof o.pattern_type !== 'string') return refused('an indicator without a pattern and its pattern_type');
  if (o.pattern_type !== 'stix') return skipped(`a ${o.pattern_type} pattern`);
  if (o.pattern.length > MAX_PATTERN) return refused(`a pattern longer than ${MAX_PATTERN} characters`);
  const comparison = SINGLE_EQUALITY.exec(o.pattern.trim());
  if (!comparison) return skipped('a pattern that is not one equality on a value');
  const [, type, literal] = comparison as unknown as [string, string, string];
  const text = literal.replace(/\\(['\\])/g, '$1');
  let kind: 'number' | 'ip';
  let value: string | null;
  if (NUMBER_TYPES.has(type)) {
    kind = 'number';
    value = normalisePhoneNumber(text)?.key ?? null;
    if (value === null) return refused('a phone-number pattern whose value is not a number');
  } else if (type === 'ipv4-addr' || type === 'ipv6-addr') {
    kind = 'ip';
    // A CIDR block names many addresses; scores are of one (docs/federation.md).
    if (text.includes('/')) return skipped('an address block, not one address');
    value = canonicalIpAddress(text);
    if (value === null || value.includes(':') !== (type === 'ipv6-addr')) return refused(`an ${type} pattern whose value is not such an address`);
  } else return skipped(`a pattern on ${type}`);
  return {
    verdict: 'accepted',
    indicator: { objectId: o.id, kind, value, confidence, validFrom, modified, validUntil, revoked: o.revoked === true, tlp },
  };
}

/** The strictest TLP level among an object's markings; null when none is TLP; false when malformed. */
function tlpOf(refs: unknown): TlpLevel | null | false {
  if (refs === undefined) return null;
  if (!Array.isArray(refs) || refs.length > MAX_MARKINGS || refs.some((r) => typeof r !== 'string' || !IDENTIFIER.test(r))) return false;
  let level: TlpLevel | null = null;
  for (const ref of refs as string[]) {
    const found = Object.hasOwn(TLP_MARKINGS, ref) ? TLP_MARKINGS[ref]! : undefined;
    if (found && (level === null || TLP_ORDER.indexOf(found) > TLP_ORDER.indexOf(level))) level = found;
  }
  return level;
}

/** A STIX timestamp as `toISOString` writes it; undefined when it is not one. */
function instant(value: unknown): string | undefined {
  if (typeof value !== 'string' || !TIMESTAMP.test(value)) return undefined;
  const at = new Date(value);
  return Number.isNaN(at.getTime()) ? undefined : at.toISOString();
}

/** Why an object is hostile in its shape (too big, too deep, prototype keys, control characters), or undefined. */
function hostility(root: object): string | undefined {
  let nodes = 0;
  const walk = (value: unknown, depth: number): string | undefined => {
    if (++nodes > MAX_NODES) return `more than ${MAX_NODES} values`;
    if (typeof value === 'string') {
      if (value.length > MAX_STRING) return `a string longer than ${MAX_STRING} characters`;
      // Control characters have no place in an indicator, and would reach logs and terminals;
      // a description's line breaks and tabs are text.
      if (/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/.test(value)) return 'a string with control characters';
      return undefined;
    }
    if (typeof value !== 'object' || value === null) return undefined;
    if (depth > MAX_DEPTH) return `nested deeper than ${MAX_DEPTH}`;
    if (Array.isArray(value)) {
      for (const item of value) {
        const why = walk(item, depth + 1);
        if (why) return why;
      }
      return undefined;
    }
    for (const key of Object.keys(value)) {
      if (HOSTILE_KEYS.has(key)) return `a property named ${key}`;
      if (key.length > 250) return 'a property name longer than 250 characters';
      const why = walk((value as Record<string, unknown>)[key], depth + 1);
      if (why) return why;
    }
    return undefined;
  };
  return walk(root, 0);
}

const refused = (why: string): ObjectVerdict => ({ verdict: 'refused', why });
const skipped = (why: string): ObjectVerdict => ({ verdict: 'skipped', why });

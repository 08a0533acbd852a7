import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { EVENT_FIELD_SPECS, EVENT_FIELDS, eventFieldsOf, FORMAT_RULES, TEXT_RULE, type FormatRule } from '../../src/domain/events/event-fields.ts';
import { parseEventTimestamp } from '../../src/domain/events/event-timestamp.ts';
import { sipMethodError } from '../../src/domain/events/honeypot-event.ts';
import { canonicalIpAddress } from '../../src/domain/ip-address.ts';
import { canonicalUuid } from '../../src/domain/uuid.ts';

const compiled = new Map<string, RegExp>();

/** A pattern as JSON Schema validators run it: in Unicode mode (AJV), or without (many others). */
function matches(rule: FormatRule, value: string, flags = 'u'): boolean {
  const key = `${flags}/${rule.pattern}`;
  let regex = compiled.get(key);
  if (!regex) compiled.set(key, (regex = new RegExp(rule.pattern, flags)));
  return regex.test(value);
}

/** Strings over an alphabet: near misses of a syntax, most of them wrong. */
const over = (alphabet: string, maxLength: number) => fc.string({ unit: fc.constantFrom(...alphabet), maxLength });

describe('the event field table', () => {
  it('has one row per field, in the specification’s order', () => {
    expect(EVENT_FIELD_SPECS.map((spec) => spec.name)).toEqual(EVENT_FIELDS);
    expect(new Set(EVENT_FIELDS).size).toBe(13);
  });

  it('says what the contract says of each field', () => {
    const row = (name: string) => EVENT_FIELD_SPECS.find((spec) => spec.name === name)!;
    expect(EVENT_FIELD_SPECS.filter((spec) => spec.mayBeEmpty).map((spec) => spec.name)).toEqual(['called_number', 'sip_user_agent']);
    expect(row('collected_method').values).toEqual(['responsive', 'passive']);
    expect(row('transport_type').values).toEqual(['UDP', 'TCP', 'TLS']);
    expect(EVENT_FIELD_SPECS.filter((spec) => spec.format).map((spec) => [spec.name, spec.format])).toEqual([
      ['event_timestamp', 'timestamp'],
      ['event_uuid', 'uuid'],
      ['created_by_node_id', 'uuid'],
      ['source_ip', 'ip'],
      ['destination_ip', 'ip'],
      ['sip_method', 'sip-token'],
    ]);
    expect(row('sip_message').maxLength).toEqual({ bytes: 65_535 });
    for (const spec of EVENT_FIELD_SPECS.filter((s) => s.name !== 'sip_message')) expect(spec.maxLength).toEqual({ chars: 1024 });
    expect(FORMAT_RULES['sip-token'].maxChars).toBe(32);
  });

  it('picks exactly the 13 fields out of a larger record', () => {
    const event = Object.fromEntries(EVENT_FIELDS.map((f) => [f, `${f}!`])) as Record<(typeof EVENT_FIELDS)[number], string>;
    expect(eventFieldsOf({ ...event, extra: 'x', event_time: 't' } as typeof event)).toEqual(event);
  });
});

// Each format's pattern is documentation; the domain's own check decides. They must agree, or
// the OpenAPI document would promise what the server refuses, or hide what it accepts.
describe('each format’s pattern says what the domain accepts', () => {
  it('ip: canonicalIpAddress', () => {
    const ipAccepted = (value: string) => canonicalIpAddress(value) !== null;
    const mutated = fc.tuple(fc.ipV6(), fc.nat(), fc.constantFrom('', ':', '.', '0', 'f', '::', '1.2.3.4')).map(([ip, at, insert]) => {
      const i = at % (ip.length + 1);
      return ip.slice(0, i) + insert + ip.slice(i + 1);
    });
    fc.assert(
      fc.property(
        fc.oneof(
          fc.ipV4(),
          fc.ipV4Extended(),
          fc.ipV6(),
          fc.ipV6().map((ip) => ip.toUpperCase()),
          mutated,
          fc.stringMatching(new RegExp(FORMAT_RULES.ip.pattern)),
          over('0123456789abcdefABCDEF:.', 45),
          over('0123456789.', 16),
        ),
        (value) => {
          expect(matches(FORMAT_RULES.ip, value), value).toBe(ipAccepted(value));
        },
      ),
      { numRuns: 3000 },
    );
    for (const value of ['fe80::1%eth0', '[::1]', '2001:db8::/32', '01.2.3.4', '::1.2.3.04', '1::2::3', ' ::1', '1:2:3:4:5:6:7::']) {
      expect(matches(FORMAT_RULES.ip, value), value).toBe(ipAccepted(value));
    }
  });

  it('uuid: canonicalUuid, which takes neither braces nor a urn:uuid: prefix', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.uuid(),
          fc.uuid().map((u) => u.toUpperCase()),
          fc.uuid().map((u) => `urn:uuid:${u}`),
          fc.uuid().map((u) => `{${u}}`),
          fc.stringMatching(new RegExp(FORMAT_RULES.uuid.pattern)),
          over('0123456789abcdefABCDEFg-', 38),
        ),
        (value) => {
          expect(matches(FORMAT_RULES.uuid, value), value).toBe(canonicalUuid(value) !== null);
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('sip-token: sipMethodError, bound included', () => {
    const { maxChars = Infinity } = FORMAT_RULES['sip-token'];
    fc.assert(
      fc.property(fc.oneof(fc.string({ maxLength: 40 }), fc.stringMatching(new RegExp(FORMAT_RULES['sip-token'].pattern))), (value) => {
        const documented = matches(FORMAT_RULES['sip-token'], value) && [...value].length <= maxChars;
        expect(documented, value).toBe(sipMethodError(value) === undefined);
      }),
      { numRuns: 2000 },
    );
  });

  it('timestamp: parseEventTimestamp, but for what a pattern cannot say', () => {
    // Far enough that only the calendar speaks, not the 24-hour rule.
    const farFuture = new Date(8.64e15);
    // A day that does not exist, and instants outside 1970-9999 in UTC: said in the description.
    const unsayable = new Set(['is not a real date', 'must be in 1970 or later', 'is too far in the future']);
    const formatted = fc
      .tuple(fc.date({ min: new Date('1970-01-02T00:00:00Z'), max: new Date('9999-12-30T00:00:00Z'), noInvalidDate: true }), fc.string({ unit: fc.constantFrom(...'0123456789'), maxLength: 9 }), fc.boolean())
      .map(([date, digits, node]) => {
        const text = date.toISOString().slice(0, 19) + (digits ? `.${digits}` : '');
        return node ? text.replace('T', ' ') : `${text}Z`;
      });
    fc.assert(
      fc.property(
        fc.oneof(
          formatted,
          fc.stringMatching(new RegExp(FORMAT_RULES.timestamp.pattern)),
          fc.stringMatching(/^\d{4}-\d{2}-\d{2}[ Tt]\d{2}:\d{2}:\d{2}(\.\d{1,10})?([Zz]|[+-]\d{2}:\d{2})?$/),
          fc.string({ maxLength: 40 }),
        ),
        (value) => {
          const parsed = parseEventTimestamp(value, farFuture);
          if (matches(FORMAT_RULES.timestamp, value)) {
            if ('error' in parsed) expect(unsayable, `${value}: ${parsed.error}`).toContain(parsed.error);
          } else {
            expect(parsed, value).toHaveProperty('error');
          }
        },
      ),
      { numRuns: 3000 },
    );
  });

  it('text: no NUL, no unpaired surrogate, with or without Unicode mode', () => {
    const anyUnit = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 4 }),
      fc.integer({ min: 0xd800, max: 0xdfff }).map((unit) => String.fromCharCode(unit)),
      fc.constant('\u0000'),
    );
    fc.assert(
      fc.property(fc.array(anyUnit, { maxLength: 8 }).map((parts) => parts.join('')), (value) => {
        const accepted = !value.includes('\u0000') && value.isWellFormed();
        return matches(TEXT_RULE, value) === accepted && matches(TEXT_RULE, value, '') === accepted;
      }),
      { numRuns: 1000 },
    );
    expect(matches(TEXT_RULE, 'Zoiper 😀 5.4', '')).toBe(true);
  });
});

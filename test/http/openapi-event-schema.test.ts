import { Ajv, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVENT_FIELD_SPECS, EVENT_FIELDS, FORMAT_RULES, TEXT_RULE, type EventFieldSpec } from '../../src/domain/events/event-fields.ts';
import { validateHoneypotEvent } from '../../src/domain/events/honeypot-event.ts';
import { recordedEvents } from '../support/recorded-requests.ts';
import { startHarness, type Harness } from '../support/harness.ts';

type StringSchema = { type: string; description?: string; example?: string; minLength?: number; maxLength?: number; enum?: string[]; format?: string; pattern?: string };
type ObjectSchema = { type: string; required: string[]; properties: Record<string, StringSchema> };

// After every fixture event, and within a day of them.
const NOW = new Date('2026-11-23T00:00:00Z');

/**
 * What JSON Schema cannot say, and the schema's descriptions say instead: that a date exists,
 * that the instant is in 1970-9999 (UTC) and at most 24 hours after the server's clock, and
 * that sip_message is at most 65,535 bytes (maxLength bounds characters).
 */
const UNSAYABLE = [
  { field: 'event_timestamp', message: 'is not a real date' },
  { field: 'event_timestamp', message: 'must be in 1970 or later' },
  { field: 'event_timestamp', message: 'is too far in the future' },
  { field: 'event_timestamp', message: 'is more than 24 hours in the future' },
  { field: 'sip_message', message: 'must be at most 65535 bytes' },
];

const twoDigits = (max: number) => fc.integer({ min: 0, max }).map((n) => String(n).padStart(2, '0'));

/** A timestamp of a real instant a day or more inside 1970..NOW, in each form the contract names. */
const realTimestamp = fc
  .tuple(
    fc.date({ min: new Date('1970-01-02T00:00:00Z'), max: new Date('2026-11-21T00:00:00Z'), noInvalidDate: true }),
    fc.string({ unit: fc.constantFrom(...'0123456789'), maxLength: 9 }),
    fc.oneof(fc.constantFrom(' ', 'Z', 'z'), fc.tuple(fc.constantFrom('+', '-'), twoDigits(23), twoDigits(59)).map(([sign, hh, mm]) => `${sign}${hh}:${mm}`)),
  )
  .map(([date, digits, zone]) => {
    const [day, time] = date.toISOString().slice(0, 19).split('T') as [string, string];
    const fraction = digits ? `.${digits}` : '';
    return zone === ' ' ? `${day} ${time}${fraction}` : `${day}T${time}${fraction}${zone}`;
  });

/** A value the field's rules should accept (the domain may still refuse a date, see UNSAYABLE). */
function plausible(spec: EventFieldSpec): fc.Arbitrary<string> {
  if (spec.values) return fc.constantFrom(...spec.values);
  if (spec.format === 'ip') return fc.oneof(fc.ipV4(), fc.ipV6(), fc.ipV6().map((ip) => ip.toUpperCase()));
  if (spec.format === 'uuid') return fc.oneof(fc.uuid(), fc.uuid().map((u) => u.toUpperCase()));
  if (spec.format === 'timestamp') return fc.oneof(realTimestamp, fc.stringMatching(new RegExp(FORMAT_RULES.timestamp.pattern)));
  if (spec.format) return fc.stringMatching(new RegExp(FORMAT_RULES[spec.format].pattern));
  // Any code point, astral ones (a pair of UTF-16 units) included.
  return fc.string({ unit: 'binary', minLength: spec.mayBeEmpty ? 0 : 1, maxLength: 30 });
}

/** A value that is often wrong: the shapes a careless client sends. */
const careless: fc.Arbitrary<unknown> = fc.oneof(
  fc.constant(undefined),
  fc.constant(''),
  fc.string({ maxLength: 12 }),
  fc.string({ unit: 'binary', minLength: 1025, maxLength: 1030 }),
  fc.constantFrom('a\u0000b', 'x\ud800', '\udc00', 'fe80::1%eth0', 'urn:uuid:891da16a-56b1-497f-abef-ca3a2a849bea', 'udp', '01.2.3.4', '2022-02-22T11:19:15'),
  fc.integer(),
  fc.constant(null),
  fc.array(fc.string(), { maxLength: 2 }),
);

/** Events as they arrive: each field plausible, or now and then careless; JSON drops undefined. */
const events = fc
  .tuple(...EVENT_FIELD_SPECS.map((spec) => fc.oneof({ weight: 12, arbitrary: plausible(spec) }, { weight: 1, arbitrary: careless })))
  .map((values) => JSON.parse(JSON.stringify(Object.fromEntries(EVENT_FIELDS.map((field, i) => [field, values[i]])))) as Record<string, unknown>);

describe('the OpenAPI event schemas say what the server accepts (docs/api.md §5)', () => {
  let h: Harness;
  let schemas: Record<string, ObjectSchema>;
  let acceptedBySchema: ValidateFunction;

  beforeAll(async () => {
    h = await startHarness();
    const doc = (await (await fetch(`${h.url}/api/openapi.json`)).json()) as { components: { schemas: Record<string, ObjectSchema> } };
    schemas = doc.components.schemas;
    // As a client's validator would run the published schema: formats known, `example` allowed.
    const ajv = new Ajv({ allErrors: true, strict: false });
    addFormats.default(ajv);
    acceptedBySchema = ajv.compile(schemas.HoneypotEvent!);
  });
  afterAll(() => h?.close());

  it('HoneypotEvent lists exactly the table’s fields, in order, all required', () => {
    const schema = schemas.HoneypotEvent!;
    expect(schema.type).toBe('object');
    expect(Object.keys(schema.properties)).toEqual(EVENT_FIELDS);
    expect(schema.required).toEqual(EVENT_FIELDS);
  });

  it('with the exact enums, the uuid format, bounds, descriptions and examples', () => {
    const property = schemas.HoneypotEvent!.properties;
    expect(property.collected_method!.enum).toEqual(['responsive', 'passive']);
    expect(property.transport_type!.enum).toEqual(['UDP', 'TCP', 'TLS']);
    expect(EVENT_FIELDS.filter((f) => property[f]!.enum)).toEqual(['collected_method', 'transport_type']);
    expect(EVENT_FIELDS.filter((f) => property[f]!.format === 'uuid')).toEqual(['event_uuid', 'created_by_node_id']);
    expect(EVENT_FIELDS.filter((f) => property[f]!.minLength === undefined)).toEqual(['called_number', 'sip_user_agent']);
    expect(EVENT_FIELDS.filter((f) => property[f]!.minLength !== undefined).every((f) => property[f]!.minLength === 1)).toBe(true);
    expect(Object.fromEntries(EVENT_FIELDS.map((f) => [f, property[f]!.maxLength]))).toMatchObject({ app_name: 1024, sip_method: 32, sip_message: 65_535 });
    expect(property.source_ip!.pattern).toBe(FORMAT_RULES.ip.pattern);
    expect(property.event_timestamp!.pattern).toBe(FORMAT_RULES.timestamp.pattern);
    expect(property.app_name!.pattern).toBe(TEXT_RULE.pattern);
    // What the patterns cannot say, the descriptions do.
    expect(property.event_timestamp!.description).toMatch(/date must exist.*1970.*|1970.*date must exist/);
    expect(property.event_timestamp!.description).toContain('24 hours');
    expect(property.sip_message!.description).toContain('65,535 bytes');
    for (const field of EVENT_FIELDS) {
      expect(property[field]!.description, field).toBeTruthy();
      expect(property[field]!.example, field).toEqual(expect.any(String));
    }
    // The examples together make an event the server accepts.
    const example = Object.fromEntries(EVENT_FIELDS.map((f) => [f, property[f]!.example]));
    expect(acceptedBySchema(example)).toBe(true);
    expect(validateHoneypotEvent(example, NOW)).toMatchObject({ ok: true });
  });

  it('StoredEvent has the same field schemas, and the two instants', () => {
    const stored = schemas.StoredEvent!;
    expect(Object.keys(stored.properties)).toEqual([...EVENT_FIELDS, 'event_time', 'received_at']);
    expect(stored.required).toEqual([...EVENT_FIELDS, 'event_time', 'received_at']);
    for (const field of EVENT_FIELDS) expect(stored.properties[field], field).toEqual(schemas.HoneypotEvent!.properties[field]);
  });

  it('an event the schema accepts passes validateHoneypotEvent, but for what JSON Schema cannot say', () => {
    let accepted = 0;
    fc.assert(
      fc.property(events, (event) => {
        if (!acceptedBySchema(event)) return;
        accepted += 1;
        const result = validateHoneypotEvent(event, NOW);
        if (!result.ok) for (const error of result.errors) expect(UNSAYABLE, JSON.stringify(event)).toContainEqual(error);
      }),
      { numRuns: 2000 },
    );
    // The property says something only if the schema accepted a good share of the events.
    expect(accepted).toBeGreaterThan(200);
  });

  it('an event validateHoneypotEvent accepts, the schema accepts', () => {
    let accepted = 0;
    fc.assert(
      fc.property(events, (event) => {
        if (!validateHoneypotEvent(event, NOW).ok) return;
        accepted += 1;
        expect(acceptedBySchema(event), JSON.stringify(acceptedBySchema.errors)).toBe(true);
      }),
      { numRuns: 2000 },
    );
    expect(accepted).toBeGreaterThan(100);
    for (const line of recordedEvents()) expect(acceptedBySchema(JSON.parse(line)), line).toBe(true);
  });

  it('the unsayable refusals are real: the schema lets them through, the domain refuses', () => {
    const example = Object.fromEntries(EVENT_FIELDS.map((f) => [f, schemas.HoneypotEvent!.properties[f]!.example]));
    const cases: Array<[Record<string, string>, { field: string; message: string }]> = [
      [{ event_timestamp: '2023-02-29 00:00:00' }, UNSAYABLE[0]!],
      [{ event_timestamp: '1969-12-31T23:59:59Z' }, UNSAYABLE[1]!],
      [{ event_timestamp: '2026-11-25T00:00:00Z' }, UNSAYABLE[3]!],
      // 30,000 characters, 90,000 bytes.
      [{ sip_message: '€'.repeat(30_000) }, UNSAYABLE[4]!],
    ];
    for (const [override, error] of cases) {
      const event = { ...example, ...override };
      expect(acceptedBySchema(event), JSON.stringify(override).slice(0, 60)).toBe(true);
      expect(validateHoneypotEvent(event, NOW)).toEqual({ ok: false, errors: [error] });
    }
  });
});

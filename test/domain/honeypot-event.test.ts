import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { EVENT_FIELDS, type EventField } from '../../src/domain/events/event-fields.ts';
import { validateHoneypotEvent } from '../../src/domain/events/honeypot-event.ts';
import { recordedEvents } from '../support/recorded-requests.ts';

// After every fixture event, and within a day of them.
const NOW = new Date('2026-11-23T00:00:00Z');

const valid = (overrides: Record<string, unknown> = {}) => ({
  app_name: 'sentrypeer',
  app_version: '4.0.6',
  event_timestamp: '2022-02-22 11:19:15.848934346',
  event_uuid: '891DA16A-56B1-497F-ABEF-CA3A2A849BEA',
  created_by_node_id: '732E7F50-637D-4FDE-81E0-5C32F1BB5A92',
  collected_method: 'passive',
  transport_type: 'TLS',
  source_ip: '::ffff:203.0.113.7',
  destination_ip: '2001:DB8:0::2',
  called_number: 'sip:+46 8 121 185 32@example.com',
  sip_method: 'INVITE',
  sip_user_agent: 'NOT_FOUND',
  sip_message: 'INVITE sip:… SIP/2.0\r\n\r\n',
  ...overrides,
});

function errorsOf(body: unknown): Array<{ field: string; message: string }> {
  const result = validateHoneypotEvent(body, NOW);
  return result.ok ? [] : result.errors;
}

function hashOf(body: Record<string, unknown>): string {
  const result = validateHoneypotEvent(body, NOW);
  if (!result.ok) throw new Error(JSON.stringify(result.errors));
  return result.event.content_hash;
}

describe('EVENT_FIELDS', () => {
  it('lists the 13 fields in the contract’s order', () => {
    expect(EVENT_FIELDS).toEqual([
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
    ]);
  });

  it('matches the fields the real node sends, no more, no fewer', () => {
    for (const line of recordedEvents()) expect(Object.keys(JSON.parse(line)).sort()).toEqual([...EVENT_FIELDS].sort());
  });
});

describe('validateHoneypotEvent', () => {
  it('accepts every line the real SentryPeer node logged, keeping its values', () => {
    // test/fixtures holds a verbatim copy of the shared fixtures, so a fresh clone (CI) has it.
    const lines = recordedEvents();
    expect(lines.length).toBe(26);
    for (const line of lines) {
      const body = JSON.parse(line) as Record<EventField, string>;
      const result = validateHoneypotEvent(body, NOW);
      if (!result.ok) throw new Error(`${line.slice(0, 200)}: ${JSON.stringify(result.errors)}`);
      for (const field of EVENT_FIELDS) expect(result.event[field], field).toBe(body[field]);
      expect(result.event.event_time).toMatch(/^2026-11-22T06:36:\d{2}\.\d{9}Z$/);
      expect(result.event.number_written).toBe(body.called_number);
    }
  });

  it('derives the fixtures’ lookup keys, merging the 00 and 011 forms', () => {
    const keys = new Map<string, string | null>();
    for (const line of recordedEvents()) {
      const result = validateHoneypotEvent(JSON.parse(line), NOW);
      if (result.ok) keys.set(result.event.called_number, result.event.number_key);
    }
    expect(Object.fromEntries(keys)).toEqual({
      '0046812118532': '+46812118532',
      '00441224928978': '+441224928978',
      '011390662279016': '+390662279016',
      '+972597744894': '+972597744894',
      '9011442033180000': '9011442033180000',
      '100': '100',
      '1000': '1000',
      '2001': '2001',
      '0037167890123': '+37167890123',
      '00881234567': '+881234567',
      '2564713313': '2564713313',
      '201': '201',
    });
  });

  it('stores canonical forms, keeps the rest as received, and drops unknown fields', () => {
    const result = validateHoneypotEvent(valid({ x_extra: 'dropped', id: 7 }), NOW);
    if (!result.ok) throw new Error(JSON.stringify(result.errors));
    expect(result.event).toEqual({
      ...valid(),
      event_uuid: '891da16a-56b1-497f-abef-ca3a2a849bea',
      created_by_node_id: '732e7f50-637d-4fde-81e0-5c32f1bb5a92',
      source_ip: '203.0.113.7',
      destination_ip: '2001:db8::2',
      event_time: '2022-02-22T11:19:15.848934346Z',
      number_written: '+46812118532',
      number_key: '+46812118532',
      content_hash: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    expect(Object.keys(result.event)).not.toContain('x_extra');
    expect(Object.keys(result.event)).toHaveLength(17);
  });

  it('hashes the 13 stored values as a JSON array in field order', () => {
    const result = validateHoneypotEvent(valid(), NOW);
    if (!result.ok) throw new Error('invalid');
    const expected = createHash('sha256')
      .update(JSON.stringify(EVENT_FIELDS.map((f) => result.event[f])))
      .digest('hex');
    expect(result.event.content_hash).toBe(expected);
  });

  it('hashes content so that replays match and any change does not', () => {
    expect(hashOf(valid())).toBe(hashOf(valid({ extra: 1 })));
    expect(hashOf(valid())).toBe(hashOf({ ...Object.fromEntries(Object.entries(valid()).reverse()) }));
    // Case and spelling of a UUID or address is not content: it is the same uuid or address.
    expect(hashOf(valid())).toBe(hashOf(valid({ event_uuid: '891da16a-56b1-497f-abef-ca3a2a849bea' })));
    expect(hashOf(valid())).toBe(hashOf(valid({ source_ip: '203.0.113.7', destination_ip: '2001:db8::2' })));
    const changes: Record<EventField, string> = {
      app_name: 'sentrypeer2',
      app_version: '4.0.7',
      event_timestamp: '2022-02-22 11:19:15.848934347',
      event_uuid: '891da16a-56b1-497f-abef-ca3a2a849beb',
      created_by_node_id: '732e7f50-637d-4fde-81e0-5c32f1bb5a93',
      collected_method: 'responsive',
      transport_type: 'UDP',
      source_ip: '203.0.113.8',
      destination_ip: '2001:db8::3',
      called_number: 'sip:+46812118532@example.com',
      sip_method: 'OPTIONS',
      sip_user_agent: 'NOT_FOUND ',
      sip_message: 'INVITE sip:… SIP/2.0\r\n\r\n\r\n',
    };
    for (const field of EVENT_FIELDS) expect(hashOf(valid({ [field]: changes[field] })), field).not.toBe(hashOf(valid()));
  });

  it('cannot be fooled by moving text between fields', () => {
    expect(hashOf(valid({ app_name: 'a', app_version: 'b"c' }))).not.toBe(hashOf(valid({ app_name: 'a","b', app_version: 'c' })));
    expect(hashOf(valid({ sip_user_agent: 'ab', sip_message: 'c' }))).not.toBe(hashOf(valid({ sip_user_agent: 'a', sip_message: 'bc' })));
  });

  it('allows empty called_number and sip_user_agent only', () => {
    const ok = validateHoneypotEvent(valid({ called_number: '', sip_user_agent: '' }), NOW);
    expect(ok.ok).toBe(true);
    if (ok.ok) {
      expect(ok.event.called_number).toBe('');
      expect(ok.event.number_written).toBeNull();
      expect(ok.event.number_key).toBeNull();
    }
    const empty = Object.fromEntries(EVENT_FIELDS.map((f) => [f, '']));
    expect(errorsOf(empty)).toEqual(
      EVENT_FIELDS.filter((f) => f !== 'called_number' && f !== 'sip_user_agent').map((field) => ({ field, message: 'must not be empty' })),
    );
  });

  it('accepts an event whose called_number is not a diallable number, without a lookup key', () => {
    for (const called_number of ['weird@@value', ' ', '1'.repeat(65), 'sip:@host']) {
      const result = validateHoneypotEvent(valid({ called_number }), NOW);
      expect(result.ok, called_number).toBe(true);
      if (result.ok) {
        expect(result.event.called_number).toBe(called_number);
        expect(result.event.number_written).toBeNull();
        expect(result.event.number_key).toBeNull();
      }
    }
  });

  it('names every bad field once, in field order, without echoing values', () => {
    const secret = 'S3CRET-VALUE-'.repeat(10);
    const errors = errorsOf({
      app_name: 7,
      app_version: null,
      event_timestamp: secret,
      event_uuid: secret,
      created_by_node_id: [],
      collected_method: 'PASSIVE',
      transport_type: 'udp',
      source_ip: secret,
      destination_ip: '1.2.3.4.5',
      called_number: {},
      sip_method: 'INVITE\r\n',
      sip_user_agent: 1,
    });
    expect(errors.map((e) => e.field)).toEqual([...EVENT_FIELDS]);
    expect(JSON.stringify(errors)).not.toContain('S3CRET');
    expect(errors.find((e) => e.field === 'sip_message')?.message).toBe('is required');
    expect(errors.find((e) => e.field === 'app_name')?.message).toBe('must be a string');
    expect(errors.find((e) => e.field === 'app_version')?.message).toBe('must be a string');
    for (const { message } of errors) expect(message.length).toBeLessThan(120);
  });

  it.each([
    ['event_timestamp', '2022-02-30 00:00:00', 'is not a real date'],
    ['event_timestamp', '2026-11-25 00:00:00', 'is more than 24 hours in the future'],
    ['event_timestamp', '1969-12-31 23:59:59', 'must be in 1970 or later'],
    ['event_timestamp', '22/02/2022', 'must be YYYY-MM-DD HH:MM:SS with up to 9 fractional digits, or RFC 3339'],
    ['event_uuid', '891da16a56b1497fabefca3a2a849bea', 'must be a UUID (8-4-4-4-12 hexadecimal digits)'],
    ['created_by_node_id', 'node-1', 'must be a UUID (8-4-4-4-12 hexadecimal digits)'],
    ['collected_method', 'Passive', 'must be one of: responsive, passive'],
    ['collected_method', 'active', 'must be one of: responsive, passive'],
    ['transport_type', 'tcp', 'must be one of: UDP, TCP, TLS'],
    ['transport_type', 'SCTP', 'must be one of: UDP, TCP, TLS'],
    ['source_ip', '127.1', 'must be an IPv4 or IPv6 address'],
    ['source_ip', '127.0.0.1:5060', 'must be an IPv4 or IPv6 address'],
    ['destination_ip', 'fe80::1%eth0', 'must be an IPv4 or IPv6 address'],
    ['sip_method', 'IN VITE', 'must be a SIP method token of at most 32 characters'],
    ['app_name', 'a'.repeat(1025), 'must be at most 1024 characters'],
    ['app_version', undefined, 'is required'],
  ])('refuses %s %j: %s', (field, value, message) => {
    const body: Record<string, unknown> = valid({ [field]: value });
    if (value === undefined) delete body[field];
    expect(errorsOf(body)).toEqual([{ field, message }]);
  });

  it('reports only the first failing rule of a field', () => {
    expect(errorsOf(valid({ event_uuid: 'x'.repeat(2000) }))).toEqual([{ field: 'event_uuid', message: 'must be at most 1024 characters' }]);
    expect(errorsOf(valid({ sip_method: '' }))).toEqual([{ field: 'sip_method', message: 'must not be empty' }]);
  });

  it('refuses NUL characters in any field, as PostgreSQL text cannot hold them', () => {
    expect(errorsOf(valid({ sip_user_agent: 'a\u0000b', sip_message: '\u0000' }))).toEqual([
      { field: 'sip_user_agent', message: 'must not contain NUL characters' },
      { field: 'sip_message', message: 'must not contain NUL characters' },
    ]);
  });

  it.each([[null], [[]], [['a']], ['event'], [42], [true], [undefined]])('rejects a body that is not an object: %j', (body) => {
    expect(validateHoneypotEvent(body, NOW)).toEqual({ ok: false, errors: [{ field: '(body)', message: 'must be a JSON object' }] });
  });

  it('does not read inherited properties as fields', () => {
    const errors = errorsOf(Object.create(valid()));
    expect(errors.map((e) => e.field)).toEqual([...EVENT_FIELDS]);
    expect(errors.every((e) => e.message === 'is required')).toBe(true);
  });

  it('is not confused by a JSON "__proto__" key', () => {
    const body = JSON.parse(`{"__proto__":{"app_name":"x"},${JSON.stringify(valid()).slice(1)}`);
    expect(validateHoneypotEvent(body, NOW).ok).toBe(true);
  });

  it('measures sip_message in UTF-8 bytes and other fields in characters', () => {
    expect(validateHoneypotEvent(valid({ sip_message: 'a'.repeat(65_535) }), NOW).ok).toBe(true);
    expect(errorsOf(valid({ sip_message: 'a'.repeat(65_536) }))).toEqual([{ field: 'sip_message', message: 'must be at most 65535 bytes' }]);
    expect(validateHoneypotEvent(valid({ sip_message: 'é'.repeat(32_768) }), NOW).ok).toBe(false);
    expect(validateHoneypotEvent(valid({ sip_message: 'é'.repeat(32_767) }), NOW).ok).toBe(true);
    expect(validateHoneypotEvent(valid({ sip_message: '€'.repeat(21_845) }), NOW).ok).toBe(true);
    expect(validateHoneypotEvent(valid({ sip_message: '€'.repeat(21_846) }), NOW).ok).toBe(false);
    expect(validateHoneypotEvent(valid({ sip_message: '😀'.repeat(16_383) }), NOW).ok).toBe(true);
    expect(validateHoneypotEvent(valid({ sip_message: '😀'.repeat(16_384) }), NOW).ok).toBe(false);
    expect(validateHoneypotEvent(valid({ sip_user_agent: 'é'.repeat(1024) }), NOW).ok).toBe(true);
    expect(validateHoneypotEvent(valid({ sip_user_agent: 'é'.repeat(1025) }), NOW).ok).toBe(false);
    for (const field of EVENT_FIELDS.filter((f) => ['app_name', 'app_version', 'called_number', 'sip_user_agent'].includes(f))) {
      expect(validateHoneypotEvent(valid({ [field]: 'a'.repeat(1024) }), NOW).ok, field).toBe(true);
      expect(errorsOf(valid({ [field]: 'a'.repeat(1025) })), field).toEqual([{ field, message: 'must be at most 1024 characters' }]);
    }
  });

  it('counts other fields in characters (code points), not UTF-16 units', () => {
    // An emoji is one character but two UTF-16 units.
    expect(validateHoneypotEvent(valid({ app_name: '😀'.repeat(1024) }), NOW).ok).toBe(true);
    expect(validateHoneypotEvent(valid({ sip_user_agent: '😀'.repeat(513) }), NOW).ok).toBe(true);
    expect(validateHoneypotEvent(valid({ sip_user_agent: `${'😀'.repeat(1000)}${'a'.repeat(24)}` }), NOW).ok).toBe(true);
    expect(errorsOf(valid({ sip_user_agent: '😀'.repeat(1025) }))).toEqual([{ field: 'sip_user_agent', message: 'must be at most 1024 characters' }]);
    expect(errorsOf(valid({ app_name: `${'😀'.repeat(1024)}a` }))).toEqual([{ field: 'app_name', message: 'must be at most 1024 characters' }]);
  });

  it('refuses a lone UTF-16 surrogate in any field, naming the field', () => {
    const message = 'must be valid Unicode text (it holds an unpaired UTF-16 surrogate)';
    expect(errorsOf(valid({ app_name: 'a\ud800', sip_user_agent: '\udc00b', sip_message: 'x\ud83d' }))).toEqual([
      { field: 'app_name', message },
      { field: 'sip_user_agent', message },
      { field: 'sip_message', message },
    ]);
    // As JSON would carry it, and in a field with its own rule: still named for the surrogate.
    const parsed = JSON.parse(JSON.stringify(valid()).replace('"INVITE"', '"INV\\ud800"')) as Record<string, unknown>;
    expect(errorsOf(parsed)).toEqual([{ field: 'sip_method', message }]);
    // A proper pair is a character like any other.
    expect(validateHoneypotEvent(valid({ sip_user_agent: '\ud83d\ude00' }), NOW).ok).toBe(true);
  });

  it.each(['OPTIONS', 'REGISTER', 'X-CUSTOM', 'a.b!c%d*e_f+g`h\'i~j', 'A'.repeat(32)])('accepts the SIP method token %s', (sip_method) => {
    expect(validateHoneypotEvent(valid({ sip_method }), NOW).ok).toBe(true);
  });

  it.each(['IN VITE', 'INVITE;', 'INV\u00c9TE', 'A'.repeat(33), '<script>', 'INVITE/', 'INVITE"', 'INVITE\t', '(INVITE)'])(
    'rejects the SIP method %j',
    (sip_method) => {
      expect(errorsOf(valid({ sip_method })).map((e) => e.field)).toEqual(['sip_method']);
    },
  );
});

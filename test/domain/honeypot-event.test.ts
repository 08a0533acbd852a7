import { describe, expect, it } from 'vitest';
import { EVENT_FIELDS, validateHoneypotEvent } from '../../src/domain/honeypot-event.ts';
import { recordedEvents } from '../support/recorded-requests.ts';

const NOW = new Date('2026-11-23T00:00:00Z');

const valid = (overrides: Record<string, unknown> = {}) => ({
  app_name: 'sentrypeer',
  app_version: '4.0.6',
  event_timestamp: '2022-02-22 11:19:15.848934346',
  event_uuid: '891DA16A-56B1-497F-ABEF-CA3A2A849BEA',
  created_by_node_id: '732e7f50-637d-4fde-81e0-5c32f1bb5a92',
  collected_method: 'passive',
  transport_type: 'TLS',
  source_ip: '::ffff:203.0.113.7',
  destination_ip: '2001:db8::2',
  called_number: 'sip:+46 8 121 185 32@example.com',
  sip_method: 'INVITE',
  sip_user_agent: 'NOT_FOUND',
  sip_message: 'INVITE sip:… SIP/2.0\r\n\r\n',
  ...overrides,
});

describe('validateHoneypotEvent', () => {
  it('accepts every line the real SentryPeer node logged', () => {
    const lines = recordedEvents();
    expect(lines.length).toBeGreaterThan(10);
    for (const line of lines) {
      const result = validateHoneypotEvent(JSON.parse(line), NOW);
      expect(result.ok, line.slice(0, 200)).toBe(true);
    }
  });

  it('stores canonical forms, keeps the rest as received, and drops unknown fields', () => {
    const result = validateHoneypotEvent(valid({ x_extra: 'dropped' }), NOW);
    if (!result.ok) throw new Error(JSON.stringify(result.errors));
    expect(result.event).toEqual({
      ...valid(),
      event_uuid: '891da16a-56b1-497f-abef-ca3a2a849bea',
      source_ip: '203.0.113.7',
      event_time: '2022-02-22T11:19:15.848934346Z',
      number_written: '+46812118532',
      number_key: '+46812118532',
      content_hash: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
  });

  it('hashes content so that replays match and any change does not', () => {
    const hash = (o: Record<string, unknown>) => {
      const r = validateHoneypotEvent(o, NOW);
      if (!r.ok) throw new Error('invalid');
      return r.event.content_hash;
    };
    expect(hash(valid())).toBe(hash(valid({ extra: 1 })));
    // The uuid's case is not content: it is the same uuid.
    expect(hash(valid())).toBe(hash(valid({ event_uuid: '891da16a-56b1-497f-abef-ca3a2a849bea' })));
    for (const field of EVENT_FIELDS.filter((f) => !['event_uuid', 'source_ip', 'destination_ip', 'created_by_node_id', 'collected_method', 'transport_type', 'event_timestamp'].includes(f))) {
      expect(hash(valid({ [field]: `${valid()[field]}x` })), field).not.toBe(hash(valid()));
    }
  });

  it('allows empty called_number and sip_user_agent only', () => {
    const ok = validateHoneypotEvent(valid({ called_number: '', sip_user_agent: '' }), NOW);
    expect(ok.ok).toBe(true);
    if (ok.ok) expect(ok.event.number_key).toBeNull();
    const empty = Object.fromEntries(EVENT_FIELDS.map((f) => [f, '']));
    const result = validateHoneypotEvent(empty, NOW);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.errors.map((e) => e.field)).toEqual(EVENT_FIELDS.filter((f) => f !== 'called_number' && f !== 'sip_user_agent'));
  });

  it('accepts an event whose called_number is not a diallable number, without a lookup key', () => {
    const result = validateHoneypotEvent(valid({ called_number: 'weird@@value' }), NOW);
    expect(result.ok).toBe(true);
    if (result.ok) expect(result.event.number_key).toBeNull();
  });

  it('names every bad field once, in field order, without echoing values', () => {
    const secret = 'S3CRET-VALUE-'.repeat(10);
    const result = validateHoneypotEvent(
      {
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
      },
      NOW,
    );
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.errors.map((e) => e.field)).toEqual([...EVENT_FIELDS]);
    expect(JSON.stringify(result.errors)).not.toContain('S3CRET');
    expect(result.errors.find((e) => e.field === 'sip_message')?.message).toBe('is required');
  });

  it('refuses NUL characters in any field, as PostgreSQL text cannot hold them', () => {
    const result = validateHoneypotEvent(valid({ sip_user_agent: 'a\u0000b', sip_message: '\u0000' }), NOW);
    expect(result).toEqual({
      ok: false,
      errors: [
        { field: 'sip_user_agent', message: 'must not contain NUL characters' },
        { field: 'sip_message', message: 'must not contain NUL characters' },
      ],
    });
  });

  it.each([[null], [[]], ['event'], [42], [undefined]])('rejects a body that is not an object: %j', (body) => {
    expect(validateHoneypotEvent(body, NOW)).toEqual({ ok: false, errors: [{ field: '(body)', message: 'must be a JSON object' }] });
  });

  it('does not read inherited properties as fields', () => {
    const proto = valid();
    const result = validateHoneypotEvent(Object.create(proto), NOW);
    expect(result.ok).toBe(false);
  });

  it('measures sip_message in UTF-8 bytes and other fields in characters', () => {
    expect(validateHoneypotEvent(valid({ sip_message: 'a'.repeat(65_535) }), NOW).ok).toBe(true);
    expect(validateHoneypotEvent(valid({ sip_message: 'a'.repeat(65_536) }), NOW).ok).toBe(false);
    expect(validateHoneypotEvent(valid({ sip_message: 'é'.repeat(32_768) }), NOW).ok).toBe(false);
    expect(validateHoneypotEvent(valid({ sip_message: 'é'.repeat(32_767) }), NOW).ok).toBe(true);
    expect(validateHoneypotEvent(valid({ sip_user_agent: 'é'.repeat(1024) }), NOW).ok).toBe(true);
    expect(validateHoneypotEvent(valid({ sip_user_agent: 'é'.repeat(1025) }), NOW).ok).toBe(false);
  });

  it.each(['OPTIONS', 'REGISTER', 'X-CUSTOM', 'a.b!c%d*e_f+g`h\'i~j'])('accepts the SIP method token %s', (sip_method) => {
    expect(validateHoneypotEvent(valid({ sip_method }), NOW).ok).toBe(true);
  });

  it.each(['IN VITE', 'INVITE;', 'INV\u00c9TE', 'A'.repeat(33), '<script>'])('rejects the SIP method %j', (sip_method) => {
    expect(validateHoneypotEvent(valid({ sip_method }), NOW).ok).toBe(false);
  });
});

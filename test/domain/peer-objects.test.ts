import { describe, expect, it } from 'vitest';
import { readPeerObject } from '../../src/domain/federation/peer-objects.ts';
import { validatePeerSettings } from '../../src/domain/federation/peer-settings.ts';
import { indicatorOf } from '../../src/domain/intelligence/stix-indicators.ts';

const facts = { score: 64, first_seen: '2026-01-01T10:00:00.000Z', created: '2026-01-02T00:00:00.000Z', modified: '2026-01-03T00:00:00.123Z', validUntil: '2026-02-01T00:00:00.000Z' };

/** What a peer's STIX objects become (docs/federation.md, "What is kept, skipped and refused"), without a store or a network. */
describe('a peer object read', () => {
  it("reads Tollwatch's own indicators back as it publishes them: numbers and addresses kept, ranges skipped", () => {
    const number = indicatorOf('phone-numbers', { ...facts, value: '+46812118532' });
    expect(readPeerObject(number)).toEqual({
      verdict: 'accepted',
      indicator: { objectId: number.id, kind: 'number', value: '+46812118532', confidence: 64, validFrom: '2026-01-01T10:00:00.000Z', modified: '2026-01-03T00:00:00.123Z', validUntil: '2026-02-01T00:00:00.000Z', revoked: false, tlp: null },
    });
    const v6 = indicatorOf('ip-addresses', { ...facts, value: '2001:db8::7' });
    expect(readPeerObject(v6)).toMatchObject({ verdict: 'accepted', indicator: { kind: 'ip', value: '2001:db8::7' } });
    expect(readPeerObject({ ...v6, revoked: true })).toMatchObject({ verdict: 'accepted', indicator: { revoked: true } });
    expect(readPeerObject(indicatorOf('number-ranges', { ...facts, value: '+4681211' }))).toMatchObject({ verdict: 'skipped' });
  });

  it('unescapes a pattern literal, and keys a number as lookups do', () => {
    const base = indicatorOf('phone-numbers', { ...facts, value: '+46812118532' });
    expect(readPeerObject({ ...base, pattern: "[x-tollwatch-phone-number:value = 'tel:+46-8-121 185 32;phone-context=x']" })).toMatchObject({ indicator: { value: '+46812118532' } });
    expect(readPeerObject({ ...base, pattern: "[x-tollwatch-phone-number:value = '1234\\'5']" })).toMatchObject({ verdict: 'refused' });
    expect(readPeerObject({ ...base, pattern: "[ipv4-addr:value = '2001:db8::1']" })).toMatchObject({ verdict: 'refused' });
    expect(readPeerObject({ ...base, pattern: "[ipv4-addr:value = '010.0.0.1']" })).toMatchObject({ verdict: 'refused' });
    expect(readPeerObject({ ...base, pattern: "[ipv4-addr:value = '192.0.2.1'] WITHIN 300 SECONDS" })).toMatchObject({ verdict: 'skipped' });
  });

  it("checks a peer's settings, naming each bad field", () => {
    expect(validatePeerSettings({ name: 'fellow', apiRoot: 'https://peer.example/taxii2/root' })).toEqual({
      name: 'fellow',
      apiRoot: 'https://peer.example/taxii2/root/',
      collections: [],
      auth: 'none',
      username: null,
      credential: null,
      trust: 0.5,
      pollSeconds: 300,
      republish: false,
      enabled: true,
    });
    expect(() => validatePeerSettings({ name: 'x', apiRoot: 'ftp://peer.example/' })).toThrow(/api_root must be an http: or https: URL/);
    expect(() => validatePeerSettings({ name: 'x', apiRoot: 'https://user:pw@peer.example/' })).toThrow(/api_root must not hold credentials/);
    expect(() => validatePeerSettings({ name: 'x', apiRoot: 'https://peer.example/', auth: 'basic', credential: 's' })).toThrow(/username Basic authentication needs a username/);
    expect(() => validatePeerSettings({ name: 'x', apiRoot: 'https://peer.example/', auth: 'bearer' })).toThrow(/credential must be/);
    expect(() => validatePeerSettings({ name: 'x', apiRoot: 'https://peer.example/', credential: 's' })).toThrow(/no credential without Basic or bearer/);
    expect(() => validatePeerSettings({ name: 'x', apiRoot: 'https://peer.example/', pollSeconds: 86_401 })).toThrow(/poll_seconds must be a whole number of seconds from 60 to 86400/);
    expect(() => validatePeerSettings({ name: 'x', apiRoot: 'https://peer.example/', collections: ['a/b'] })).toThrow(/collections each must be a collection id/);
  });
});

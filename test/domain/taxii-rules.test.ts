import { describe, expect, it } from 'vitest';
import { ServiceError } from '../../src/domain/errors.ts';
import type { KeptAggregate } from '../../src/domain/intelligence/feed-service.ts';
import type { NumberAggregate } from '../../src/domain/lookups/lookup-aggregates.ts';
import { DEFAULT_SCORING } from '../../src/domain/intelligence/scores.ts';
import { indicatorId } from '../../src/domain/intelligence/stix-indicators.ts';
import { millisecondsOf, nextOf, readRequest, taxiiTimestamp } from '../../src/domain/intelligence/taxii-collections.ts';
import { fingerprintOf, nextVersion, type PublishedObject } from '../../src/domain/intelligence/taxii-versions.ts';
import { acceptsTaxii } from '../../src/http/taxii/taxii-answers.ts';

/** The rules of docs/taxii.md that need no server: parameters, timestamps, Accept, and when a version is due. */
describe('TAXII request parameters (TAXII 2.1 §3.4)', () => {
  const refused = (endpoint: Parameters<typeof readRequest>[0], query: Record<string, unknown>) => {
    try {
      readRequest(endpoint, query);
    } catch (err) {
      expect(err).toBeInstanceOf(ServiceError);
      return (err as ServiceError).errors?.map((e) => e.field);
    }
    return undefined;
  };

  it('defaults to the latest version of every object, a full page, from the start', () => {
    expect(readRequest('objects', {})).toEqual({ afterMs: Number.NEGATIVE_INFINITY, limit: 1000, ids: undefined, versions: { all: false, first: false, last: true, modified: [] }, matchesAnything: true });
  });

  it('reads added_after strictly, to the millisecond, in the forms clients send', () => {
    expect(readRequest('objects', { added_after: '2026-11-27T10:00:00.123456Z' }).afterMs).toBe(Date.parse('2026-11-27T10:00:00.123Z'));
    expect(readRequest('objects', { added_after: '2026-11-27T10:00:00Z' }).afterMs).toBe(Date.parse('2026-11-27T10:00:00Z'));
    expect(readRequest('objects', { added_after: '2026-11-27T11:00:00.5+01:00' }).afterMs).toBe(Date.parse('2026-11-27T10:00:00.500Z'));
    for (const bad of ['2026-11-27', '2026-02-30T00:00:00Z', '2026-11-27 10:00:00Z', 'now', '2026-11-27T25:00:00Z']) expect(refused('objects', { added_after: bad }), bad).toEqual(['added_after']);
  });

  it('takes next with or without added_after, the later position winning, and refuses a forged one', () => {
    const next = nextOf(Date.parse('2026-11-27T10:00:00.123Z'));
    expect(readRequest('objects', { next }).afterMs).toBe(Date.parse('2026-11-27T10:00:00.123Z'));
    expect(readRequest('objects', { next, added_after: '2026-01-01T00:00:00Z' }).afterMs).toBe(Date.parse('2026-11-27T10:00:00.123Z'));
    expect(readRequest('objects', { next, added_after: '2027-01-01T00:00:00Z' }).afterMs).toBe(Date.parse('2027-01-01T00:00:00Z'));
    for (const bad of ['', 'abc', Buffer.from('tw1:x').toString('base64url'), Buffer.from('other:12').toString('base64url'), 'a'.repeat(41)]) expect(refused('objects', { next: bad }), bad).toEqual(['next']);
  });

  it('caps limit at the server’s page and refuses anything but a positive integer', () => {
    expect(readRequest('objects', { limit: '7' }).limit).toBe(7);
    expect(readRequest('objects', { limit: '50000' }).limit).toBe(1000);
    for (const bad of ['0', '-1', '1.5', 'ten', '']) expect(refused('objects', { limit: bad }), bad).toEqual(['limit']);
    expect(refused('objects', { limit: ['1', '2'] })).toEqual(['limit']);
  });

  it('reads match[version] as an OR of first, last, all or timestamps; all alone', () => {
    expect(readRequest('objects', { 'match[version]': 'first,last' }).versions).toEqual({ all: false, first: true, last: true, modified: [] });
    expect(readRequest('objects', { 'match[version]': '2026-11-27T10:00:00Z,last' }).versions).toEqual({ all: false, first: false, last: true, modified: ['2026-11-27T10:00:00.000Z'] });
    // Versions are kept to the millisecond: a finer timestamp names none of them.
    expect(readRequest('objects', { 'match[version]': '2026-11-27T10:00:00.0001Z' }).versions.modified).toEqual([]);
    expect(refused('objects', { 'match[version]': 'all,first' })).toEqual(['match[version]']);
    expect(refused('objects', { 'match[version]': 'newest' })).toEqual(['match[version]']);
  });

  it('matches nothing, without an error, for types and STIX versions the collections do not hold', () => {
    expect(readRequest('objects', { 'match[type]': 'malware' }).matchesAnything).toBe(false);
    expect(readRequest('objects', { 'match[type]': 'malware,indicator' }).matchesAnything).toBe(true);
    expect(readRequest('objects', { 'match[spec_version]': '2.0' }).matchesAnything).toBe(false);
    expect(refused('objects', { 'match[id]': 'indicator--x' })).toEqual(['match[id]']);
    expect(refused('objects', { 'match[type]': 'indicator,' })).toEqual(['match[type]']);
  });

  it('takes on each endpoint only the parameters §5 gives it, ignoring the others', () => {
    expect(readRequest('versions', { 'match[version]': 'first' }).versions.last).toBe(true);
    expect(readRequest('object', { 'match[id]': 'nonsense' }).ids).toBeUndefined();
    expect(readRequest('objects', { 'match[colour]': 'red', foo: 'bar' }).matchesAnything).toBe(true);
  });

  it('writes date_added as TAXII timestamps, microseconds and Z', () => {
    expect(taxiiTimestamp(Date.parse('2026-11-27T10:00:00.123Z'))).toBe('2026-11-27T10:00:00.123000Z');
    expect(millisecondsOf(taxiiTimestamp(1_795_000_000_123))).toEqual({ ms: 1_795_000_000_123, finer: false });
  });
});

describe('Accept (TAXII 2.1 §3.1)', () => {
  it('admits TAXII 2.1, TAXII without a version, wildcards, and no Accept at all', () => {
    for (const accept of [undefined, '', 'application/taxii+json;version=2.1', 'application/taxii+json', 'APPLICATION/TAXII+JSON; VERSION="2.1"', '*/*', 'application/*', 'text/html, */*;q=0.1']) expect(acceptsTaxii(accept), String(accept)).toBe(true);
  });
  it('refuses other versions, other types and q=0', () => {
    for (const accept of ['application/taxii+json;version=2.0', 'application/json', 'application/stix+json;version=2.1', 'text/html', 'application/taxii+json;version=2.1;q=0', '*/*;q=0']) expect(acceptsTaxii(accept), accept).toBe(false);
  });
});

describe('when an indicator gets a version', () => {
  const settings = { minScore: 50, scoring: DEFAULT_SCORING };
  const hour = new Date('2026-11-27T10:00:00Z');
  const now = new Date('2026-11-27T10:20:00Z');
  const number = '+46812118532';
  const kept = (overrides: Partial<NumberAggregate> = {}, changedAt = '2026-11-27T09:50:00.000Z'): KeptAggregate<NumberAggregate> => ({
    key: number,
    aggregate: { seenCount: 6, firstSeen: '2026-11-27T09:00:00.000000000Z', lastSeen: '2026-11-27T09:50:00.000000000Z', sourceIpCount: 3, sipMethods: { INVITE: 6 }, forms: [number], nodeCount: 2, ...overrides },
    publishedAt: '2026-11-27T09:00:01.000Z',
    changedAt,
  });

  it('publishes a value that reaches the threshold as the feed’s object, and nothing more while it is unchanged', () => {
    const first = nextVersion('phone-numbers', { value: number, kept: kept(), object: undefined }, settings, hour, now, undefined)!;
    expect(first.body.id).toBe(indicatorId('phone-numbers', number));
    expect(first.body.created).toBe('2026-11-27T09:00:01.000Z');
    expect(first.body.confidence).toBe(54);
    expect(first.object).toMatchObject({ generation: 0, revoked: false, fingerprint: fingerprintOf(first.body) });
    expect(nextVersion('phone-numbers', { value: number, kept: kept(), object: first.object }, settings, hour, now, first.body)).toBeUndefined();
  });

  it('versions a change with a later modified, never an earlier or equal one', () => {
    const first = nextVersion('phone-numbers', { value: number, kept: kept(), object: undefined }, settings, hour, now, undefined)!;
    // A change whose own instant is no later than the version before still gets a later modified.
    const seenMore = nextVersion('phone-numbers', { value: number, kept: kept({ seenCount: 7, sipMethods: { INVITE: 7 } }, '2026-11-27T09:00:00.000Z'), object: first.object }, settings, hour, now, first.body)!;
    expect(seenMore.body.confidence).toBeGreaterThan(first.body.confidence);
    expect(Date.parse(seenMore.body.modified)).toBeGreaterThan(Date.parse(first.body.modified));
    expect(seenMore.body.created).toBe(first.body.created);
    expect(seenMore.body.id).toBe(first.body.id);
  });

  it('revokes below the threshold or out of the shared data set, then starts a new object', () => {
    const first = nextVersion('phone-numbers', { value: number, kept: kept(), object: undefined }, settings, hour, now, undefined)!;
    const weak = kept({ seenCount: 1, sourceIpCount: 1, nodeCount: 1, sipMethods: { OPTIONS: 1 } });
    for (const reading of [weak, undefined]) {
      const revoked = nextVersion('phone-numbers', { value: number, kept: reading, object: first.object }, settings, hour, now, first.body)!;
      expect(revoked.body).toEqual({ ...first.body, modified: '2026-11-27T10:20:00.000Z', revoked: true });
      expect(revoked.object.revoked).toBe(true);
      // Revoked stays revoked while it does not score.
      expect(nextVersion('phone-numbers', { value: number, kept: reading, object: revoked.object }, settings, hour, now, revoked.body)).toBeUndefined();
      const again = nextVersion('phone-numbers', { value: number, kept: kept(), object: revoked.object }, settings, hour, now, revoked.body)!;
      expect(again.object.generation).toBe(1);
      expect(again.body.id).toBe(indicatorId('phone-numbers', number, 1));
      expect(again.body.id).not.toBe(first.body.id);
      expect(again.body.created).toBe('2026-11-27T10:20:00.000Z');
    }
  });

  it('never publishes a value below the threshold that was never published', () => {
    expect(nextVersion('phone-numbers', { value: number, kept: kept({ seenCount: 1, sourceIpCount: 1, nodeCount: 1 }), object: undefined }, settings, hour, now, undefined)).toBeUndefined();
  });
});

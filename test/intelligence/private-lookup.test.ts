import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { numberKeyHash, phoneNumberKey } from '../../sdk/src/index.ts';
import { normalisePhoneNumber } from '../../src/domain/phone-number.ts';
import { sdkFor } from '../sdk/sdk-client.ts';
import { sdkNumberForms } from '../support/number-forms.ts';
import { postEvent, sampleEvent, startHarness, type Harness, type TestAccount } from '../support/harness.ts';
import { spawnCli } from '../support/server-process.ts';

/** The user CLI, as a user runs it, against a store nobody can open: it must never try. */
const tollwatch = (env: Record<string, string>, args: string[]) => spawnCli({ DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none', ...env }, ...args);

describe('the SDK’s number key is the server’s (docs/api.md §13)', () => {
  it('agrees with the server’s normaliser on generated numbers', () => {
    fc.assert(
      fc.property(sdkNumberForms, (input) => {
        expect(phoneNumberKey(input)).toBe(normalisePhoneNumber(input)?.key ?? null);
      }),
      { numRuns: 2000 },
    );
  });

  it('hashes with Web Crypto exactly as the server does, as in the worked example of docs/api.md §13', async () => {
    expect(await numberKeyHash('+46812118532')).toBe(createHash('sha256').update('+46812118532').digest('hex'));
    expect(phoneNumberKey('0046 8 121 185 32')).toBe('+46812118532');
    expect(await numberKeyHash('+46812118532')).toBe('71d8195b791393679230de7ea7087afb150651af83f2ed01b8d1cbcab1b8c532');
  });
});

describe('Tollwatch.rangeLookup and tollwatch lookup --private', () => {
  let h: Harness;
  let who: TestAccount;
  let env: Record<string, string>;

  beforeAll(async () => {
    h = await startHarness();
    who = await h.account();
    env = { TOLLWATCH_URL: h.url, TOLLWATCH_CLIENT_ID: who.clientId, TOLLWATCH_CLIENT_SECRET: who.clientSecret };
    expect((await postEvent(who, sampleEvent({ called_number: '0046812118532' }))).status).toBe(201);
  });
  afterAll(() => h?.close());

  it('finds a number seen, in any written form, without sending it', async () => {
    const urls: string[] = [];
    const { client } = sdkFor(h, who, { fetch: (url, init) => (urls.push(url), fetch(url, init)) });
    for (const form of ['+46 8 121 185 32', '0046812118532', 'tel:01146812118532']) {
      expect(await client.rangeLookup(form)).toMatchObject({ key: '+46812118532', found: true, seen_count: 1, score: expect.any(Number) });
    }
    expect(await client.rangeLookup('+441632960001')).toEqual({ key: '+441632960001', found: false });
    for (const url of urls.filter((u) => u.includes('/api/'))) {
      expect(url).toMatch(/\/api\/phone-numbers\/range\/[0-9a-f]{5}$/);
      expect(url).not.toMatch(/46812118532|441632960001/);
    }
    await expect(client.rangeLookup('not a number!')).rejects.toThrow(TypeError);
  });

  it('the CLI exits 0 for a number seen and 1 for one not seen', async () => {
    const seen = await tollwatch(env, ['lookup', '--private', '0046812118532']);
    expect(seen).toMatchObject({ status: 0, stderr: '' });
    expect(seen.stdout).toMatch(/^\+46812118532 {2}SEEN {2}1 time, score \d+ \(asked privately/);
    const unseen = await tollwatch(env, ['lookup', '--private', '+441632960001']);
    expect(unseen.status).toBe(1);
    expect(unseen.stdout).toContain('not seen');
    const json = await tollwatch(env, ['--json', 'lookup', '--private', '+46812118532']);
    expect(JSON.parse(json.stdout)).toMatchObject({ key: '+46812118532', found: true });
  });
});

import { decodeProtectedHeader } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OLD_KEY_LIFETIME_MS } from '../../src/oauth/signing-keys.ts';
import { startHarness, type Harness, type TestAccount } from '../support/harness.ts';
import { freshDatabase } from '../support/test-database.ts';

/** The JWK Set an instance publishes. */
async function jwks(h: Harness): Promise<{ keys: Array<{ kid: string }> }> {
  const res = await fetch(`${h.url}/.well-known/jwks.json`);
  expect(res.status).toBe(200);
  return (await res.json()) as { keys: Array<{ kid: string }> };
}

const kidsOf = async (h: Harness) => (await jwks(h)).keys.map((k) => k.kid).sort();

/** A token for `who` from the token endpoint of instance `h`. */
async function tokenFrom(h: Harness, who: TestAccount): Promise<string> {
  const res = await fetch(`${h.url}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ grant_type: 'client_credentials', client_id: who.clientId, client_secret: who.clientSecret }),
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { access_token: string }).access_token;
}

const kidOf = (token: string) => decodeProtectedHeader(token).kid;

/** The status of an authenticated lookup: 404 (not found) means the token was honoured. */
async function lookup(h: Harness, token: string): Promise<number> {
  return (await fetch(`${h.url}/api/phone-numbers/100`, { headers: { authorization: `Bearer ${token}` } })).status;
}

/** Stops an instance that shares another's store (the store stays). */
async function stop(h: Harness) {
  await h.app.close();
  await h.services.close();
  expect(h.conformance.violations).toEqual([]);
}

describe('one signing key however many instances start together', () => {
  it('instances started at once on a new store publish the same single key and sign with it', async () => {
    // Several rounds: each is a fresh race for the first key.
    for (let round = 0; round < 3; round++) {
      const store = await freshDatabase();
      const instances = await Promise.all([1, 2, 3].map(() => startHarness({ DATABASE_URL: store.url })));
      try {
        const published = await Promise.all(instances.map(kidsOf));
        expect(published[0]).toHaveLength(1);
        for (const kids of published) expect(kids).toEqual(published[0]);
        const who = await instances[0]!.account();
        for (const signer of instances) {
          const token = await tokenFrom(signer, who);
          expect(kidOf(token)).toBe(published[0]![0]);
          for (const verifier of instances) expect(await lookup(verifier, token)).toBe(404);
        }
      } finally {
        for (const h of instances) await stop(h);
        await store.drop();
      }
    }
  });
});

describe('key rotation', () => {
  let a: Harness;
  let b: Harness;
  let who: TestAccount;

  beforeAll(async () => {
    a = await startHarness();
    // A second instance on the same store that reads keys again every 300 ms instead of every minute.
    b = await startHarness({ DATABASE_URL: a.config.databaseUrl }, { keysReloadMs: 300 });
    who = await a.account();
  });
  afterAll(async () => {
    await stop(b);
    await a?.close();
  });

  it('a rotated key verifies the tokens it signed, while the new key signs new ones', async () => {
    const before = await tokenFrom(a, who);
    const oldKid = kidOf(before);
    expect(await lookup(a, before)).toBe(404);

    const started = Date.now();
    const rotation = await a.services.signingKeys.rotate();
    expect(rotation.previous?.kid).toBe(oldKid);
    expect(rotation.kid).not.toBe(oldKid);
    // It retires once the last token it signed has expired: 31 days and two minutes on.
    const retiresAt = Date.parse(rotation.previous!.retires_at);
    expect(retiresAt).toBeGreaterThanOrEqual(started + OLD_KEY_LIFETIME_MS - 1000);
    expect(retiresAt).toBeLessThanOrEqual(Date.now() + OLD_KEY_LIFETIME_MS);
    expect(OLD_KEY_LIFETIME_MS).toBe((31 * 86_400 + 120) * 1000);

    const after = await tokenFrom(a, who);
    expect(kidOf(after)).toBe(rotation.kid);
    expect(await lookup(a, before)).toBe(404);
    expect(await lookup(a, after)).toBe(404);
    expect(await kidsOf(a)).toEqual([oldKid, rotation.kid].sort());

    const listed = await a.services.signingKeys.list();
    expect(listed.map(({ kid, current, retires_at }) => ({ kid, current, retires_at }))).toEqual(
      expect.arrayContaining([
        { kid: oldKid, current: false, retires_at: rotation.previous!.retires_at },
        { kid: rotation.kid, current: true, retires_at: null },
      ]),
    );
    expect(listed).toHaveLength(2);
  });

  it('another instance verifies the new key at once and signs with it from its next reload', async () => {
    const rotation = await a.services.signingKeys.rotate();
    // B has never seen the new kid: it reads the store before refusing it.
    expect(await lookup(b, await tokenFrom(a, who))).toBe(404);
    await new Promise((resolve) => setTimeout(resolve, 400));
    const fromB = await tokenFrom(b, who);
    expect(kidOf(fromB)).toBe(rotation.kid);
    expect(await lookup(a, fromB)).toBe(404);
    expect(await kidsOf(b)).toEqual(await kidsOf(a));
  });

  it('an old key past its retirement leaves the JWKS and the tokens it signed are refused', async () => {
    const before = await tokenFrom(a, who);
    const oldKid = kidOf(before)!;
    // Honoured once, so the token is in the verified-token cache when its key retires.
    expect(await lookup(a, before)).toBe(404);
    const rotation = await a.services.signingKeys.rotate({ oldKeyLifetimeMs: 1000 });
    expect(await lookup(a, before)).toBe(404);
    expect(await kidsOf(a)).toContain(oldKid);

    await new Promise((resolve) => setTimeout(resolve, Date.parse(rotation.previous!.retires_at) - Date.now() + 100));
    for (const h of [a, b]) {
      expect(await kidsOf(h)).not.toContain(oldKid);
      const refused = await fetch(`${h.url}/api/phone-numbers/100`, { headers: { authorization: `Bearer ${before}` } });
      expect(refused.status).toBe(401);
      expect(refused.headers.get('www-authenticate')).toContain('invalid_token');
    }
    expect(await lookup(a, await tokenFrom(a, who))).toBe(404);
    // An instance started now does not load it at all.
    const c = await startHarness({ DATABASE_URL: a.config.databaseUrl });
    try {
      expect(await kidsOf(c)).not.toContain(oldKid);
      expect(await lookup(c, before)).toBe(401);
    } finally {
      await stop(c);
    }
    // The next rotation removes it from the store.
    const next = await a.services.signingKeys.rotate();
    expect(next.removed).toContain(oldKid);
    expect((await a.services.signingKeys.list()).map((k) => k.kid)).not.toContain(oldKid);
  });
});

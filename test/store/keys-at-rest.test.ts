import { chmodSync, existsSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { KeySealer, newKeySecret } from '../../src/domain/accounts/key-sealing.ts';
import { openDatabase } from '../../src/store/database.ts';
import { resolveKeySecret } from '../../src/store/maintenance/keys-at-rest.ts';
import { keyFilePath, storeFilePath } from '../../src/store/store-files.ts';
import { postEvent, sampleEvent, startHarness, type Harness, type TestAccount } from '../support/harness.ts';
import { freshDatabase, TEST_STORE, type TestDatabase } from '../support/test-database.ts';

/** Stops a server without removing its store, as a restart does. */
async function stop(h: Harness) {
  await h.app.close();
  await h.services.close();
}

/** The key secret the run's servers use on a store: its key file (SQLite) or TOLLWATCH_KEY_SECRET. */
async function sealerOf(url: string): Promise<KeySealer> {
  const database = await openDatabase(url);
  try {
    const config = loadConfig({ DATABASE_URL: url, TOLLWATCH_KEY_SECRET: process.env.TOLLWATCH_KEY_SECRET ?? '' }, false);
    return (await resolveKeySecret(config.keySecret, url, database)).sealer;
  } finally {
    await database.close();
  }
}

async function storedKeys(url: string) {
  const database = await openDatabase(url);
  try {
    return {
      signing: await database.db.selectFrom('signing_keys').selectAll().orderBy('kid').execute(),
      secrets: await database.db.selectFrom('server_secrets').selectAll().orderBy('name').execute(),
    };
  } finally {
    await database.close();
  }
}

/** Everything a store's files hold, for looking for bytes that must not be there. */
function storeBytes(url: string): string {
  const path = storeFilePath(url)!;
  return ['', '-wal'].map((suffix) => (existsSync(path + suffix) ? readFileSync(path + suffix).toString('latin1') : '')).join('');
}

const mode = (path: string) => statSync(path).mode & 0o777;

/** A token, and a cursor in the middle of a walk through three events, made on one server. */
async function tokenAndCursor(h: Harness) {
  const who = await h.account();
  for (let i = 0; i < 3; i++) expect((await postEvent(who, sampleEvent())).status).toBe(201);
  const token = await who.token();
  const page = (await (await who.api('/api/events?limit=2')).json()) as { data: Array<{ event_uuid: string }>; next_cursor: string };
  const all = (await (await who.api('/api/events')).json()) as { data: Array<{ event_uuid: string }> };
  return { who, token, cursor: page.next_cursor, rest: all.data.slice(2).map((e) => e.event_uuid) };
}

/** Checks a token and a cursor made before a restart on a server started since. */
async function expectStillGood(h: Harness, { token, cursor, rest }: { who: TestAccount; token: string; cursor: string; rest: string[] }) {
  const auth = { authorization: `Bearer ${token}` };
  expect((await fetch(`${h.url}/api/phone-numbers/100`, { headers: auth })).status).toBe(404);
  const next = await fetch(`${h.url}/api/events?limit=2&cursor=${cursor}`, { headers: auth });
  expect(next.status).toBe(200);
  expect(((await next.json()) as { data: Array<{ event_uuid: string }> }).data.map((e) => e.event_uuid)).toEqual(rest);
}

describe('keys at rest (docs/operations.md, "Keys")', () => {
  const stores: TestDatabase[] = [];
  const running: Harness[] = [];
  const fresh = async () => {
    const store = await freshDatabase();
    stores.push(store);
    return store.url;
  };
  const start = async (env: Record<string, string>) => {
    const h = await startHarness(env);
    running.push(h);
    return h;
  };
  afterEach(async () => {
    for (const h of running.splice(0)) await stop(h).catch(() => {});
  });
  afterAll(async () => {
    for (const store of stores) await store.drop();
  });

  it.skipIf(TEST_STORE !== 'sqlite')('creates the store, its WAL files, its directory and its key file readable by the owner only', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tollwatch-modes-'));
    stores.push({ url: '', drop: async () => rmSync(dir, { recursive: true, force: true }) });
    const path = join(dir, 'new', 'data', 'tollwatch.db');
    const url = `sqlite:${path}`;
    const h = await start({ DATABASE_URL: url });
    expect((await postEvent(await h.account(), sampleEvent())).status).toBe(201);
    expect(mode(join(dir, 'new'))).toBe(0o700);
    expect(mode(join(dir, 'new', 'data'))).toBe(0o700);
    for (const file of [path, `${path}-wal`, `${path}-shm`, join(dir, 'new', 'data', 'tollwatch.key')]) expect(mode(file), file).toBe(0o600);
    await stop(running.pop()!);

    // A store an earlier version left world-readable is made private when next opened.
    for (const file of [path, join(dir, 'new', 'data', 'tollwatch.key')]) chmodSync(file, 0o644);
    const again = await start({ DATABASE_URL: url });
    expect((await postEvent(await again.account(), sampleEvent())).status).toBe(201);
    for (const file of [path, `${path}-wal`, `${path}-shm`, join(dir, 'new', 'data', 'tollwatch.key')]) expect(mode(file), file).toBe(0o600);
  });

  it('keeps the private keys and the cursor key sealed, never as plain JWK or base64', async () => {
    const url = await fresh();
    const h = await start({ DATABASE_URL: url });
    await tokenAndCursor(h);
    await stop(running.pop()!);
    const { signing, secrets } = await storedKeys(url);
    const sealer = await sealerOf(url);
    expect(signing).toHaveLength(1);
    for (const row of signing) {
      expect(row.private_jwk).toMatch(/^sealed:v1:[A-Za-z0-9_-]+$/);
      expect(row.private_jwk).not.toContain('"d"');
      const jwk = JSON.parse(sealer.open(row.private_jwk, `signing_keys/${row.kid}`)) as { d: string; kty: string };
      expect(jwk).toMatchObject({ kty: 'EC', d: expect.any(String) });
      // Sealed for its row: it does not open as another's.
      expect(() => sealer.open(row.private_jwk, 'signing_keys/another')).toThrow(/does not open/);
      if (TEST_STORE === 'sqlite') expect(storeBytes(url)).not.toContain(jwk.d);
    }
    // The cursor key, and the key of the feeds' ETags (made at start, docs/api.md §14).
    expect(secrets.map((row) => row.name).sort()).toEqual(['cursor', 'feed-tag']);
    for (const row of secrets) {
      expect(row.value).toMatch(/^sealed:v1:/);
      expect(Buffer.from(sealer.open(row.value, `server_secrets/${row.name}`), 'base64')).toHaveLength(32);
    }
  });

  it('a server restarted with the same key verifies earlier tokens and continues earlier cursors', async () => {
    const url = await fresh();
    const first = await start({ DATABASE_URL: url });
    const made = await tokenAndCursor(first);
    const jwks = await (await fetch(`${first.url}/.well-known/jwks.json`)).json();
    await stop(running.pop()!);
    const second = await start({ DATABASE_URL: url });
    await expectStillGood(second, made);
    expect(await (await fetch(`${second.url}/.well-known/jwks.json`)).json()).toEqual(jwks);
  });

  it('refuses to start with a wrong key, saying so, and changes nothing in the store', async () => {
    const url = await fresh();
    const first = await start({ DATABASE_URL: url });
    const made = await tokenAndCursor(first);
    await stop(running.pop()!);
    const before = await storedKeys(url);
    const keyFile = TEST_STORE === 'sqlite' ? keyFilePath(storeFilePath(url)!) : undefined;
    const keyText = keyFile && readFileSync(keyFile, 'utf8');

    await expect(startHarness({ DATABASE_URL: url, TOLLWATCH_KEY_SECRET: newKeySecret() })).rejects.toThrow(
      /the keys in the store do not open with TOLLWATCH_KEY_SECRET: it is not the key they were encrypted with/,
    );
    if (keyFile) {
      // A key file holding another key is named in the refusal.
      writeFileSync(keyFile, `${newKeySecret()}\n`);
      await expect(startHarness({ DATABASE_URL: url })).rejects.toThrow(new RegExp(`do not open with ${keyFile}`));
      writeFileSync(keyFile, keyText!);
    }
    // Nothing regenerated or rewritten: the same keys, and the right key still opens them.
    expect(await storedKeys(url)).toEqual(before);
    if (keyFile) expect(readFileSync(keyFile, 'utf8')).toBe(keyText);
    await expectStillGood(await start({ DATABASE_URL: url }), made);
  });

  it.skipIf(TEST_STORE !== 'sqlite')('refuses to start when the key file of a sealed store is missing, and makes no new one', async () => {
    const url = await fresh();
    await start({ DATABASE_URL: url });
    await stop(running.pop()!);
    const keyFile = keyFilePath(storeFilePath(url)!);
    rmSync(keyFile);
    await expect(startHarness({ DATABASE_URL: url })).rejects.toThrow(new RegExp(`${keyFile} is missing and TOLLWATCH_KEY_SECRET is unset`));
    expect(existsSync(keyFile)).toBe(false);
  });

  it.skipIf(TEST_STORE !== 'postgres')('refuses to start on PostgreSQL without TOLLWATCH_KEY_SECRET, saying how to make one', async () => {
    const url = await fresh();
    await expect(startHarness({ DATABASE_URL: url, TOLLWATCH_KEY_SECRET: '' })).rejects.toThrow(
      /TOLLWATCH_KEY_SECRET must be set with PostgreSQL.*openssl rand -base64 32/,
    );
  });

  it('seals the plain-text keys of an earlier version on first start, keeping its tokens and cursors good', async () => {
    const url = await fresh();
    const first = await start({ DATABASE_URL: url });
    const made = await tokenAndCursor(first);
    await stop(running.pop()!);
    // Put the store back as an earlier version kept it: the same keys, in plain text, and on
    // SQLite no key file.
    const sealer = await sealerOf(url);
    const database = await openDatabase(url);
    const { signing, secrets } = await storedKeys(url);
    const plainJwk = sealer.open(signing[0]!.private_jwk, `signing_keys/${signing[0]!.kid}`);
    await database.db.updateTable('signing_keys').set({ private_jwk: plainJwk }).where('kid', '=', signing[0]!.kid).execute();
    const cursor = secrets.find((row) => row.name === 'cursor')!;
    await database.db.updateTable('server_secrets').set({ value: sealer.open(cursor.value, 'server_secrets/cursor') }).where('name', '=', 'cursor').execute();
    // An earlier version kept no other secret (the feeds' ETag key is made when first needed).
    await database.db.deleteFrom('server_secrets').where('name', '!=', 'cursor').execute();
    await database.close();
    if (TEST_STORE === 'sqlite') rmSync(keyFilePath(storeFilePath(url)!));
    const { d } = JSON.parse(plainJwk) as { d: string };
    if (TEST_STORE === 'sqlite') expect(storeBytes(url)).toContain(d);

    const upgraded = await start({ DATABASE_URL: url });
    await expectStillGood(upgraded, made);
    const after = await storedKeys(url);
    expect(after.signing.map((row) => row.kid)).toEqual([signing[0]!.kid]);
    expect(after.signing[0]!.private_jwk).toMatch(/^sealed:v1:/);
    for (const row of after.secrets) expect(row.value).toMatch(/^sealed:v1:/);
    // SQLite: the plain text is gone from the files too (secure_delete, then a truncating checkpoint).
    if (TEST_STORE === 'sqlite') expect(storeBytes(url)).not.toContain(d);
    expect(JSON.parse((await sealerOf(url)).open(after.signing[0]!.private_jwk, `signing_keys/${signing[0]!.kid}`))).toEqual(JSON.parse(plainJwk));
  });
});

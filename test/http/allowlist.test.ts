import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_ALLOWLIST_ENTRIES } from '../../src/domain/allowlists/allowlists.ts';
import { postEvent, sampleEvent, startHarness, type Harness, type TestAccount } from '../support/harness.ts';
import { spawnCli } from '../support/server-process.ts';

const MANAGER = ['read:phone-numbers', 'read:ip-addresses', 'manage:allowlist'];
const json = (body: unknown, method = 'POST'): RequestInit => ({ method, headers: { 'content-type': 'application/json' }, body: typeof body === 'string' ? body : JSON.stringify(body) });

type Entry = { id: string; kind: string; value: string; note: string | null; added_by: string; added_at: string };

async function expectProblem(res: Response, status: number, code: string) {
  expect(res.status).toBe(status);
  expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  const body = (await res.json()) as { error: string; status: number; errors?: Array<{ field: string; message: string }> };
  expect(body).toMatchObject({ error: code, status });
  return body;
}

/** An account's own allowlist (docs/api.md §16): managed over the API, applied to its lookups. */
describe('/api/allowlist (docs/api.md §16)', () => {
  let h: Harness;
  let fleet: TestAccount;
  let owner: TestAccount;
  let other: TestAccount;

  beforeAll(async () => {
    h = await startHarness();
    fleet = await h.account({ trusted: true });
    owner = await h.account({ permissions: MANAGER });
    other = await h.account({ permissions: MANAGER });
    for (const event of [
      sampleEvent({ called_number: '0046812118532', source_ip: '203.0.113.7', sip_method: 'INVITE' }),
      sampleEvent({ called_number: '+448712345678', source_ip: '2001:db8::7', sip_method: 'INVITE' }),
      sampleEvent({ called_number: '+448712345679', source_ip: '198.51.100.20', sip_method: 'INVITE' }),
    ]) {
      expect((await postEvent(fleet, event)).status).toBe(201);
    }
    await h.settled();
  });
  afterAll(() => h?.close());

  const add = (who: TestAccount, body: unknown) => who.api('/api/allowlist', json(body));
  const list = async (who: TestAccount) => ((await (await who.api('/api/allowlist')).json()) as { entries: Entry[] }).entries;
  const lookup = async (who: TestAccount, path: string) => {
    const res = await who.api(path);
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  const clear = async (who: TestAccount) => {
    for (const entry of await list(who)) expect((await who.api(`/api/allowlist/${entry.id}`, { method: 'DELETE' })).status).toBe(204);
  };

  it('needs manage:allowlist, which a client gets only when it is named', async () => {
    const reader = await h.account();
    expect(reader.account).toBeTruthy();
    await expectProblem(await reader.api('/api/allowlist'), 403, 'insufficient_scope');
    await expectProblem(await add(reader, { kind: 'ip_address', value: '203.0.113.7' }), 403, 'insufficient_scope');
    expect(await list(owner)).toEqual([]);
  });

  it('adds an entry normalised as lookups match, answers the same entry for another spelling, lists and removes it, each change audited', async () => {
    const created = await add(owner, { kind: 'phone_number', value: '0046 8 121 185 32', note: 'our test line' });
    expect(created.status).toBe(201);
    const entry = (await created.json()) as Entry;
    expect(entry).toMatchObject({ kind: 'phone_number', value: '+46812118532', note: 'our test line', added_by: `client:${owner.clientId}` });
    // The same number written another way is the same entry: 200, nothing added, nothing audited.
    const again = await add(owner, { kind: 'phone_number', value: 'tel:+46812118532', note: 'another note' });
    expect(again.status).toBe(200);
    expect(await again.json()).toEqual(entry);
    expect(await list(owner)).toEqual([entry]);
    expect(await list(other)).toEqual([]);
    // Another account can neither see nor remove it.
    await expectProblem(await other.api(`/api/allowlist/${entry.id}`, { method: 'DELETE' }), 404, 'not_found');
    await expectProblem(await owner.api('/api/allowlist/not-a-uuid', { method: 'DELETE' }), 404, 'not_found');
    expect((await owner.api(`/api/allowlist/${entry.id}`, { method: 'DELETE' })).status).toBe(204);
    await expectProblem(await owner.api(`/api/allowlist/${entry.id}`, { method: 'DELETE' }), 404, 'not_found');
    expect(await list(owner)).toEqual([]);
    const audited = (await h.services.audit.list({ accountId: owner.account.account_id, limit: 20 })).filter((a) => a.action.startsWith('allowlist.'));
    expect(audited.map((a) => a.action)).toEqual(['allowlist.entry_removed', 'allowlist.entry_added']);
    for (const record of audited) {
      expect(record).toMatchObject({ actor: `client:${owner.clientId}`, client_id: owner.clientId, detail: { list: 'account', id: entry.id, kind: 'phone_number', value: '+46812118532' } });
    }
  });

  it('refuses a bad entry with 422 naming every bad field, and stores nothing', async () => {
    const cases: Array<[unknown, string[]]> = [
      [{ kind: 'ip_range', value: '10.0.0.0/33' }, ['value']],
      [{ kind: 'ip_range', value: '10.0.0.1' }, ['value']],
      [{ kind: 'ip_range', value: '2001:db8::/129' }, ['value']],
      [{ kind: 'ip_address', value: '198.51.100.0/24' }, ['value']],
      [{ kind: 'ip_address', value: '01.2.3.4' }, ['value']],
      [{ kind: 'phone_number', value: '12!34' }, ['value']],
      [{ kind: 'phone_number', value: 'NOT_FOUND' }, ['value']],
      [{ kind: 'number_prefix', value: '+' }, ['value']],
      [{ kind: 'phone_number', value: 42 }, ['value']],
      [{ kind: 'domain', value: 'example.com', note: 'x'.repeat(501), extra: true }, ['extra', 'kind', 'note']],
      [{ kind: 'phone_number', value: '+15550000000', note: 'line\u0007break' }, ['note']],
      [[], ['body']],
    ];
    for (const [body, fields] of cases) {
      const refused = await expectProblem(await add(owner, body), 422, 'validation_failed');
      expect(refused.errors!.map((e) => e.field).sort(), JSON.stringify(body)).toEqual(fields);
    }
    await expectProblem(await owner.api('/api/allowlist', json('{"kind":')), 400, 'invalid_json');
    expect(await list(owner)).toEqual([]);
  });

  it('marks the account’s own answers allowlisted, single and bulk, with the evidence unchanged; other accounts’ answers stay as they were', async () => {
    const before = await lookup(owner, '/api/phone-numbers/%2B46812118532');
    const othersBefore = await lookup(other, '/api/phone-numbers/%2B46812118532');
    expect(before.status).toBe(200);
    expect(before.body.allowlisted).toBeUndefined();
    const entries: Record<string, Entry> = {};
    for (const [name, kind, value] of [
      ['number', 'phone_number', '01146812118532'],
      ['prefix', 'number_prefix', '0044 8712'],
      ['longer', 'number_prefix', '+44871234567'],
      ['address', 'ip_address', '::ffff:203.0.113.7'],
      ['v4range', 'ip_range', '198.51.100.99/24'],
      ['v6range', 'ip_range', '2001:DB8::/32'],
    ] as const) {
      const res = await add(owner, { kind, value });
      expect(res.status, name).toBe(201);
      entries[name] = (await res.json()) as Entry;
    }
    expect(entries.v4range!.value).toBe('198.51.100.0/24');
    expect(entries.v6range!.value).toBe('2001:db8::/32');
    const matchOf = (e: Entry) => ({ id: e.id, kind: e.kind, value: e.value });

    const number = await lookup(owner, '/api/phone-numbers/0046812118532');
    expect(number.status).toBe(200);
    const { allowlisted, allowlist_entry, phone_number: _n, ...evidence } = number.body;
    const { phone_number: _b, ...evidenceBefore } = before.body;
    expect(evidence).toEqual(evidenceBefore);
    expect(allowlisted).toBe(true);
    expect(allowlist_entry).toEqual(matchOf(entries.number!));
    // The most specific entry is named: the longer prefix over the shorter.
    expect((await lookup(owner, '/api/phone-numbers/%2B448712345678')).body).toMatchObject({ found: true, allowlisted: true, allowlist_entry: matchOf(entries.longer!) });
    expect((await lookup(owner, '/api/phone-numbers/%2B448712345679')).body).toMatchObject({ found: true, allowlisted: true, allowlist_entry: matchOf(entries.longer!) });
    expect((await lookup(owner, '/api/phone-numbers/%2B44871299')).body).toMatchObject({ found: false, allowlisted: true, allowlist_entry: matchOf(entries.prefix!) });
    expect((await lookup(owner, '/api/phone-numbers/%2B4487')).body).toEqual({ phone_number: '+4487', found: false, message: expect.any(String) });
    expect((await lookup(owner, '/api/ip-addresses/203.0.113.7')).body).toMatchObject({ found: true, score: expect.any(Number), allowlisted: true, allowlist_entry: matchOf(entries.address!) });
    expect((await lookup(owner, '/api/ip-addresses/2001:db8:0::7')).body).toMatchObject({ found: true, allowlisted: true, allowlist_entry: matchOf(entries.v6range!) });
    expect((await lookup(owner, '/api/ip-addresses/198.51.100.20')).body).toMatchObject({ found: true, allowlisted: true, allowlist_entry: matchOf(entries.v4range!) });
    expect((await lookup(owner, '/api/ip-addresses/198.51.101.20')).body.allowlisted).toBeUndefined();

    const bulk = (await (await owner.api('/api/phone-numbers/lookup', json({ phone_numbers: ['+46812118532', '+15550000000', 'x!'] }))).json()) as { results: Array<Record<string, unknown>> };
    expect(bulk.results[0]).toMatchObject({ found: true, allowlisted: true, allowlist_entry: matchOf(entries.number!) });
    expect(bulk.results[1]).toEqual({ phone_number: '+15550000000', found: false, message: expect.any(String) });
    expect(bulk.results[2]).toMatchObject({ error: 'invalid_phone_number' });
    const bulkIps = (await (await owner.api('/api/ip-addresses/lookup', json({ ip_addresses: ['198.51.100.20', '192.0.2.1'] }))).json()) as { results: Array<Record<string, unknown>> };
    expect(bulkIps.results[0]).toMatchObject({ found: true, allowlisted: true, allowlist_entry: matchOf(entries.v4range!) });
    expect(bulkIps.results[1]!.allowlisted).toBeUndefined();

    // Another account's answers are untouched by this account's list.
    expect(await lookup(other, '/api/phone-numbers/%2B46812118532')).toEqual(othersBefore);
    expect((await lookup(other, '/api/ip-addresses/203.0.113.7')).body.allowlisted).toBeUndefined();

    // Removed, the next answer is as before.
    expect((await owner.api(`/api/allowlist/${entries.number!.id}`, { method: 'DELETE' })).status).toBe(204);
    expect((await lookup(owner, '/api/phone-numbers/%2B46812118532')).body.allowlisted).toBeUndefined();
    await clear(owner);
  });

  it('has the user CLI say an answer is allowlisted, with the evidence and the exit status of a sighting', async () => {
    const entry = (await (await add(owner, { kind: 'ip_range', value: '2001:db8::/48' })).json()) as Entry;
    const env = { TOLLWATCH_URL: h.url, TOLLWATCH_CLIENT_ID: owner.clientId, TOLLWATCH_CLIENT_SECRET: owner.clientSecret };
    const run = await spawnCli(env, 'ip', '2001:db8::7');
    expect(run.status).toBe(0);
    expect(run.stdout).toContain('2001:db8::7  SEEN');
    expect(run.stdout).toContain(`  allowlisted       yes, by your ip range entry 2001:db8::/48 (${entry.id}): do not block`);
    const json = await spawnCli(env, '--json', 'ip', '2001:db8::7');
    expect(JSON.parse(json.stdout)).toMatchObject({ found: true, allowlisted: true, allowlist_entry: { id: entry.id, kind: 'ip_range', value: '2001:db8::/48' } });
    await clear(owner);
  });

  it('bounds a list at its limit with 409 limit_reached', async () => {
    const full = await h.account({ permissions: MANAGER });
    for (let i = 0; i < MAX_ALLOWLIST_ENTRIES; i++) {
      await h.services.allowlists.add(full.account.account_id, { kind: 'phone_number', value: `+1555${String(i).padStart(7, '0')}` }, 'operator');
    }
    await expectProblem(await add(full, { kind: 'ip_address', value: '192.0.2.1' }), 409, 'limit_reached');
    // Adding what the list already holds is still answered.
    expect((await add(full, { kind: 'phone_number', value: '+15550000000' })).status).toBe(200);
    expect(await list(full)).toHaveLength(MAX_ALLOWLIST_ENTRIES);
  });

  it('tells another instance on the same store at once', async () => {
    const second = await startHarness({ DATABASE_URL: h.config.databaseUrl });
    try {
      const token = await owner.token();
      const ask = async () => (await (await fetch(`${second.url}/api/ip-addresses/203.0.113.7`, { headers: { authorization: `Bearer ${token}` } })).json()) as Record<string, unknown>;
      // Kept in the second instance's memory as empty…
      expect((await ask()).allowlisted).toBeUndefined();
      const entry = (await (await add(owner, { kind: 'ip_address', value: '203.0.113.7' })).json()) as Entry;
      // …and forgotten there once the first announces the change.
      await expect.poll(async () => (await ask()).allowlisted, { timeout: 5000 }).toBe(true);
      expect((await owner.api(`/api/allowlist/${entry.id}`, { method: 'DELETE' })).status).toBe(204);
      await expect.poll(async () => (await ask()).allowlisted, { timeout: 5000 }).toBeUndefined();
    } finally {
      await second.close();
    }
  });
});

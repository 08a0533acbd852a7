import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startAnsweringProxy, type AnsweringProxy, type ProxyAction } from '../support/answering-proxy.ts';
import { firewallNamespaceMissing, firewallToolsMissing, startFirewallNamespace, submitDistinctAddresses, type FirewallNamespace } from '../support/firewall-namespace.ts';
import { eventually } from '../support/eventually.ts';
import { sampleEvent, saveUnlimitedPlan, startHarness, type Harness, type TestAccount } from '../support/harness.ts';

const MAIN = new URL('../../cli/src/main.ts', import.meta.url).pathname;
const IPSET_MAX_TIMEOUT = 2_147_483;

/**
 * `tollwatch-cli firewall sync` (docs/clients.md, "Blocklists in the firewall") with the real nft
 * and ipset, in a network namespace of the test's own, against a real server holding real
 * events: the sets hold the feed's addresses with their valid_until as timeouts, a 304 changes
 * nothing, a smaller feed removes elements, a failing server leaves the sets exactly as they
 * were (and --interval tries again at its next turn), --allow keeps addresses out, --dry-run prints
 * the script and changes nothing; and 100,000 addresses, in both. Root only
 * (unshare -n); skipped otherwise, saying so.
 */
const missing = firewallNamespaceMissing();

/** Addresses probed a lot, from several nodes to several numbers, and ones probed once. */
const STRONG = ['203.0.113.10', '203.0.113.11', '2001:db8::10'];
const WEAK = ['203.0.113.20', '198.51.100.21', '2001:db8::20', '2001:db8:1::21'];

interface FeedEntry {
  ip_address: string;
  score: number;
  valid_until?: string;
}

/** A set's elements: address → timeout in seconds (undefined: none). */
type Elements = Map<string, number | undefined>;

describe.skipIf(missing !== undefined)('tollwatch-cli firewall sync, with nft and ipset in a network namespace', () => {
  let h: Harness;
  let who: TestAccount;
  let proxy: AnsweringProxy;
  let ns: FirewallNamespace;
  let home: string;
  let answer: (path: string) => ProxyAction = () => 'forward';
  /** A threshold every address reaches, and one only the strong ones do. */
  let all: number;
  let strongOnly: number;

  beforeAll(async () => {
    expect(firewallToolsMissing(), 'nft, ipset (Debian packages nftables, ipset), unshare, nsenter and ip').toEqual([]);
    h = await startHarness();
    who = await h.account({ plan: await saveUnlimitedPlan(h) });
    const events = [
      ...STRONG.flatMap((source_ip) =>
        Array.from({ length: 12 }, (_, i) => sampleEvent({ source_ip, created_by_node_id: `732e7f50-637d-4fde-81e0-5c32f1bb5a9${i % 4}`, called_number: `004681211853${i % 6}` })),
      ),
      ...WEAK.map((source_ip) => sampleEvent({ source_ip, sip_method: 'OPTIONS' })),
    ];
    const res = await who.api('/api/events/batch', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(events) });
    expect(res.status).toBe(200);
    await h.settled();
    const scores = new Map((await feed(0)).map((e) => [e.ip_address, e.score]));
    const strongLeast = Math.min(...STRONG.map((ip) => scores.get(ip)!));
    const weakMost = Math.max(...WEAK.map((ip) => scores.get(ip)!));
    expect(strongLeast, JSON.stringify([...scores])).toBeGreaterThan(weakMost + 1);
    all = Math.min(...WEAK.map((ip) => scores.get(ip)!));
    strongOnly = weakMost + 1;
    proxy = await startAnsweringProxy(h.url, (r) => answer(r.path));
    ns = await startFirewallNamespace(proxy.url);
    home = mkdtempSync(join(tmpdir(), 'tollwatch-firewall-'));
  });
  afterEach(() => {
    answer = () => 'forward';
    return ns?.up();
  });
  afterAll(async () => {
    await ns?.close();
    await proxy?.close();
    if (home) rmSync(home, { recursive: true, force: true });
    await h?.close();
  });

  /** The feed as the server gives it to this client, in JSON. */
  async function feed(minScore: number): Promise<FeedEntry[]> {
    const res = await who.api(`/api/feeds/ip-addresses?format=json&min_score=${minScore}`);
    expect(res.status).toBe(200);
    return ((await res.json()) as { entries: FeedEntry[] }).entries;
  }

  /** Runs the CLI inside the namespace with this client's credentials and the test's config directory. */
  function sync(args: string[]) {
    const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('TOLLWATCH_')));
    return ns.run(process.execPath, [MAIN, 'firewall', 'sync', ...args], {
      env: { ...env, TOLLWATCH_URL: ns.url, TOLLWATCH_CLIENT_ID: who.clientId, TOLLWATCH_CLIENT_SECRET: who.clientSecret, TOLLWATCH_CONFIG_DIR: home },
      timeoutMs: 300_000,
    });
  }

  async function nftSet(name: string, table = 'inet tollwatch'): Promise<Elements> {
    const run = await ns.run('nft', ['-j', 'list', 'set', ...table.split(' '), name]);
    expect(run.status, run.stderr).toBe(0);
    const [, { set }] = (JSON.parse(run.stdout) as { nftables: [unknown, { set: { elem?: Array<string | { elem: { val: string; timeout?: number } }> } }] }).nftables;
    return new Map((set.elem ?? []).map((e) => (typeof e === 'string' ? [e, undefined] : [e.elem.val, e.elem.timeout])));
  }

  async function ipsetSet(name: string): Promise<Elements> {
    const run = await ns.run('ipset', ['save', name]);
    expect(run.status, run.stderr).toBe(0);
    const elements: Elements = new Map();
    for (const line of run.stdout.split('\n')) {
      const m = /^add \S+ (\S+)(?: timeout (\d+))?$/.exec(line);
      if (m) elements.set(m[1]!, m[2] === undefined || m[2] === '0' ? undefined : Number(m[2]));
    }
    return elements;
  }

  /** What the sets should hold for a feed, with each timeout as it was when `at` was (ipset's capped). */
  function expected(entries: FeedEntry[], version: 4 | 6, except: string[] = []): string[] {
    return entries
      .map((e) => e.ip_address)
      .filter((ip) => isIP(ip) === version && !except.includes(ip))
      .sort();
  }

  /** Every element's timeout is its valid_until counted from the sync, give or take a few minutes. */
  function expectTimeouts(elements: Elements, entries: FeedEntry[], at: number, cap = Infinity) {
    const byAddress = new Map(entries.map((e) => [e.ip_address, e.valid_until]));
    for (const [address, timeout] of elements) {
      const until = byAddress.get(address);
      expect(until, address).toBeDefined();
      const seconds = Math.min(cap, (Date.parse(until!) - at) / 1000);
      expect(timeout, address).toBeGreaterThan(seconds - 300);
      expect(timeout, address).toBeLessThanOrEqual(Math.ceil(seconds) + 1);
    }
  }

  describe('nft', () => {
    it('the first sync fills the v4 and v6 sets with the feed’s addresses, each timing out at its valid_until', async () => {
      const entries = await feed(all);
      expect(entries.every((e) => e.valid_until !== undefined)).toBe(true);
      const at = Date.now();
      const run = await sync(['--min-score', String(all)]);
      expect(run, run.stderr).toMatchObject({ status: 0, stderr: '' });
      expect(run.stdout).toMatch(/^applied 4 IPv4 and 3 IPv6 addresses to nft inet tollwatch \(tollwatch_v4, tollwatch_v6\) in \d+ ms\n$/);
      const v4 = await nftSet('tollwatch_v4');
      const v6 = await nftSet('tollwatch_v6');
      expect([...v4.keys()].sort()).toEqual(expected(entries, 4));
      expect([...v6.keys()].sort()).toEqual(expected(entries, 6));
      expectTimeouts(v4, entries, at);
      expectTimeouts(v6, entries, at);
      const state = JSON.parse(readFileSync(join(home, 'firewall', 'nft-inet-tollwatch-tollwatch_v4-tollwatch_v6.json'), 'utf8'));
      expect(state).toMatchObject({ etag: expect.stringMatching(/^"/), ipv4: 4, ipv6: 3, allowed_out: 0 });
    });

    it('a 304 changes nothing; the rule that drops the sets’ traffic stays through every sync', async () => {
      // The rule docs/clients.md shows, and an element of the test's own that only a full apply would remove.
      for (const line of [
        'add chain inet tollwatch input { type filter hook input priority -10; policy accept; }',
        'add rule inet tollwatch input ip saddr @tollwatch_v4 drop',
        'add rule inet tollwatch input ip6 saddr @tollwatch_v6 drop',
        'add element inet tollwatch tollwatch_v4 { 192.0.2.99 }',
      ]) {
        const run = await ns.run('nft', line.split(' ').map((word) => word));
        expect(run.status, `${line}: ${run.stderr}`).toBe(0);
      }
      const before = await nftSet('tollwatch_v4');
      let run = await sync(['--min-score', String(all)]);
      // At the turn of an hour the feed's ETag changes (docs/api.md §14): then one more try, within the hour.
      if (run.stdout.startsWith('applied')) {
        await ns.run('nft', ['add', 'element', 'inet', 'tollwatch', 'tollwatch_v4', '{ 192.0.2.99 }']);
        run = await sync(['--min-score', String(all)]);
      }
      expect(run, run.stderr).toMatchObject({ status: 0, stderr: '' });
      expect(run.stdout).toMatch(/^unchanged: nft inet tollwatch \(tollwatch_v4, tollwatch_v6\) hold the feed applied at \S+ \(4 IPv4, 3 IPv6; 304 Not Modified\)\n$/);
      expect([...(await nftSet('tollwatch_v4')).keys()].sort()).toEqual([...before.keys()].sort());
      expect((await nftSet('tollwatch_v4')).has('192.0.2.99')).toBe(true);
      const rules = await ns.run('nft', ['list', 'chain', 'inet', 'tollwatch', 'input']);
      expect(rules.stdout).toContain('ip saddr @tollwatch_v4 drop');
    });

    it('a feed that shrinks (a higher --min-score) removes elements, and the rules stay', async () => {
      const entries = await feed(strongOnly);
      const run = await sync(['--min-score', String(strongOnly)]);
      expect(run, run.stderr).toMatchObject({ status: 0, stderr: '' });
      expect(run.stdout).toMatch(/^applied 2 IPv4 and 1 IPv6 addresses/);
      expect([...(await nftSet('tollwatch_v4')).keys()].sort()).toEqual(['203.0.113.10', '203.0.113.11']);
      expect([...(await nftSet('tollwatch_v6')).keys()]).toEqual(['2001:db8::10']);
      expectTimeouts(await nftSet('tollwatch_v4'), entries, Date.now() - 60_000);
      const rules = await ns.run('nft', ['list', 'chain', 'inet', 'tollwatch', 'input']);
      expect(rules.stdout).toContain('ip6 saddr @tollwatch_v6 drop');
    });

    it('a server that is down, or answers an error, leaves the sets exactly as they were and exits 2', async () => {
      const before = [await ns.run('nft', ['list', 'table', 'inet', 'tollwatch'])];
      const strip = (listing: string) => listing.replace(/ expires \S+/g, '');
      await ns.down();
      const unreachable = await sync(['--min-score', String(all)]);
      expect(unreachable).toMatchObject({ status: 2, stdout: '' });
      expect(unreachable.stderr).toMatch(/^tollwatch-cli: cannot reach http:\/\/127\.0\.0\.1:8080: .*; the firewall sets are as they were\n$/);
      await ns.up();
      answer = (path) => (path.startsWith('/api/feeds/') ? { status: 500, headers: { 'content-type': 'application/problem+json' }, body: JSON.stringify({ type: 'about:blank', title: 'Internal Server Error', status: 500, detail: 'the store failed', error: 'internal' }) } : 'forward');
      const failing = await sync(['--min-score', String(all)]);
      expect(failing).toMatchObject({ status: 2, stdout: '' });
      expect(failing.stderr).toBe('tollwatch-cli: the store failed (internal); the firewall sets are as they were\n');
      const after = await ns.run('nft', ['list', 'table', 'inet', 'tollwatch']);
      expect(strip(after.stdout)).toBe(strip(before[0]!.stdout));
    });

    it('--allow keeps addresses and ranges out of the sets', async () => {
      const file = join(home, 'allow.txt');
      writeFileSync(file, '# our own scanners\n203.0.113.20   # the office\n\n2001:db8::/64\n');
      const run = await sync(['--min-score', String(all), '--allow', file]);
      expect(run, run.stderr).toMatchObject({ status: 0, stderr: '' });
      expect(run.stdout).toMatch(/^applied 3 IPv4 and 1 IPv6 addresses .*; 3 kept out by --allow\n$/);
      expect([...(await nftSet('tollwatch_v4')).keys()].sort()).toEqual(['198.51.100.21', '203.0.113.10', '203.0.113.11']);
      expect([...(await nftSet('tollwatch_v6')).keys()]).toEqual(['2001:db8:1::21']);
      writeFileSync(file, '203.0.113.20\nnot-an-address\n');
      const bad = await sync(['--allow', file]);
      expect(bad).toMatchObject({ status: 2, stdout: '' });
      expect(bad.stderr).toBe(`tollwatch-cli: --allow ${file} line 2: not an address or a CIDR range: "not-an-address"\n`);
    });

    it('--dry-run prints the script and changes nothing', async () => {
      const before = await nftSet('tollwatch_v4');
      const statePath = join(home, 'firewall', 'nft-inet-tollwatch-tollwatch_v4-tollwatch_v6.json');
      const state = readFileSync(statePath, 'utf8');
      const run = await sync(['--min-score', String(strongOnly), '--dry-run']);
      expect(run, run.stderr).toMatchObject({ status: 0, stderr: '' });
      const lines = run.stdout.split('\n');
      expect(lines.slice(0, 6)).toEqual([
        '# tollwatch-cli firewall sync: 2 IPv4 and 1 IPv6 addresses, one transaction',
        'add table inet tollwatch',
        'add set inet tollwatch tollwatch_v4 { type ipv4_addr; flags timeout; }',
        'add set inet tollwatch tollwatch_v6 { type ipv6_addr; flags timeout; }',
        'flush set inet tollwatch tollwatch_v4',
        'flush set inet tollwatch tollwatch_v6',
      ]);
      // The feed's order: most recently seen first, ties by value.
      expect(run.stdout).toMatch(/\nadd element inet tollwatch tollwatch_v4 \{\n {2}203\.0\.113\.1[01] timeout \d+s,\n {2}203\.0\.113\.1[01] timeout \d+s\n\}\nadd element inet tollwatch tollwatch_v6 \{\n {2}2001:db8::10 timeout \d+s\n\}\n$/);
      expect(await nftSet('tollwatch_v4')).toEqual(before);
      expect(readFileSync(statePath, 'utf8')).toBe(state);
    });

    it('--interval: a sync every interval; a failed one leaves the sets and is tried again at the next; SIGTERM ends it with 0', { timeout: 180_000 }, async () => {
      const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('TOLLWATCH_')));
      const child = spawn('nsenter', ['-t', ns.pid, '-n', process.execPath, MAIN, 'firewall', 'sync', '--interval', '10', '--min-score', String(strongOnly)], {
        env: { ...env, TOLLWATCH_URL: ns.url, TOLLWATCH_CLIENT_ID: who.clientId, TOLLWATCH_CLIENT_SECRET: who.clientSecret, TOLLWATCH_CONFIG_DIR: home },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      child.stdout.setEncoding('utf8').on('data', (s: string) => (out += s));
      child.stderr.setEncoding('utf8').on('data', (s: string) => (out += s));
      const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
      try {
        await eventually('the first sync', () => out, (o) => /^(applied|unchanged)/m.test(o), { timeoutMs: 60_000 });
        const before = await nftSet('tollwatch_v4');
        await ns.down();
        await eventually('a failed sync', () => out, (o) => o.includes('; the firewall sets are as they were; trying again in 10 s\n'), { timeoutMs: 60_000 });
        expect([...(await nftSet('tollwatch_v4')).keys()].sort()).toEqual([...before.keys()].sort());
        await ns.up();
        const syncs = out.split('\n').filter((line) => /^(applied|unchanged)/.test(line)).length;
        await eventually('the next sync', () => out, (o) => o.split('\n').filter((line) => /^(applied|unchanged)/.test(line)).length > syncs, { timeoutMs: 60_000 });
      } finally {
        child.kill('SIGTERM');
      }
      expect(await exited).toBe(0);
    });

    it('another table, family and set names', async () => {
      const run = await sync(['--min-score', String(strongOnly), '--family', 'ip6', '--table', 'blocks', '--set-v4', 'scanners4', '--set-v6', 'scanners6']);
      expect(run, run.stderr).toMatchObject({ status: 0, stderr: '' });
      expect([...(await nftSet('scanners6', 'ip6 blocks')).keys()]).toEqual(['2001:db8::10']);
      const wrong = await sync(['--set-v4', 'bad name']);
      expect(wrong).toMatchObject({ status: 2, stdout: '' });
      expect(wrong.stderr).toMatch(/^tollwatch-cli: --set-v4: a name of letters/);
    });
  });

  describe('ipset', () => {
    const ipset = (args: string[]) => sync(['--backend', 'ipset', ...args]);

    it('fills, keeps on a 304, shrinks, survives a failing server and keeps --allow out, as nft does', async () => {
      const entries = await feed(all);
      const at = Date.now();
      const first = await ipset(['--min-score', String(all)]);
      expect(first, first.stderr).toMatchObject({ status: 0, stderr: '' });
      expect(first.stdout).toMatch(/^applied 4 IPv4 and 3 IPv6 addresses to ipset tollwatch_v4, tollwatch_v6 in \d+ ms\n$/);
      const v4 = await ipsetSet('tollwatch_v4');
      expect([...v4.keys()].sort()).toEqual(expected(entries, 4));
      expect([...(await ipsetSet('tollwatch_v6')).keys()].sort()).toEqual(expected(entries, 6));
      // ipset takes timeouts up to about 24.8 days: a later valid_until is cut to that.
      expectTimeouts(v4, entries, at, IPSET_MAX_TIMEOUT);
      const names = await ns.run('ipset', ['list', '-n']);
      expect(names.stdout.split('\n').filter(Boolean).sort()).toEqual(['tollwatch_v4', 'tollwatch_v6']);

      let again = await ipset(['--min-score', String(all)]);
      if (again.stdout.startsWith('applied')) again = await ipset(['--min-score', String(all)]);
      expect(again.stdout).toMatch(/^unchanged: ipset tollwatch_v4, tollwatch_v6 hold the feed applied at \S+ \(4 IPv4, 3 IPv6; 304 Not Modified\)\n$/);

      const shrunk = await ipset(['--min-score', String(strongOnly)]);
      expect(shrunk, shrunk.stderr).toMatchObject({ status: 0, stderr: '' });
      expect([...(await ipsetSet('tollwatch_v4')).keys()].sort()).toEqual(['203.0.113.10', '203.0.113.11']);
      expect([...(await ipsetSet('tollwatch_v6')).keys()]).toEqual(['2001:db8::10']);

      const saved = (await ns.run('ipset', ['save'])).stdout.replace(/ timeout \d+/g, '');
      await ns.down();
      const down = await ipset(['--min-score', String(all)]);
      expect(down).toMatchObject({ status: 2, stdout: '' });
      expect(down.stderr).toMatch(/; the firewall sets are as they were\n$/);
      await ns.up();
      expect((await ns.run('ipset', ['save'])).stdout.replace(/ timeout \d+/g, '')).toBe(saved);

      const file = join(home, 'allow-ipset.txt');
      writeFileSync(file, '203.0.113.0/24\n');
      const allowed = await ipset(['--min-score', String(all), '--allow', file]);
      expect(allowed.stdout).toMatch(/; 3 kept out by --allow\n$/);
      expect([...(await ipsetSet('tollwatch_v4')).keys()]).toEqual(['198.51.100.21']);
    });

    it('--dry-run prints the restore script and changes nothing', async () => {
      const saved = (await ns.run('ipset', ['save'])).stdout.replace(/ timeout \d+/g, '');
      const run = await ipset(['--min-score', String(strongOnly), '--dry-run']);
      expect(run, run.stderr).toMatchObject({ status: 0, stderr: '' });
      expect(run.stdout).toContain('create tollwatch_v4-new hash:ip family inet maxelem 131072 timeout 0\nflush tollwatch_v4-new\n');
      expect(run.stdout).toMatch(/\nadd tollwatch_v4-new 203\.0\.113\.10 timeout \d+\n/);
      expect(run.stdout).toMatch(/\nswap tollwatch_v4-new tollwatch_v4\nswap tollwatch_v6-new tollwatch_v6\ndestroy tollwatch_v4-new\ndestroy tollwatch_v6-new\n$/);
      expect((await ns.run('ipset', ['save'])).stdout.replace(/ timeout \d+/g, '')).toBe(saved);
    });
  });
});

describe.skipIf(missing !== undefined)('tollwatch-cli firewall sync of 100,000 addresses', () => {
  const COUNT = 100_000;
  let h: Harness;
  let who: TestAccount;
  let ns: FirewallNamespace;
  let home: string;

  beforeAll(async () => {
    h = await startHarness();
    who = await h.account({ plan: await saveUnlimitedPlan(h) });
    // Through intake itself, as POST /api/events/batch stores them: over HTTP, with server and
    // client in this one process, a busy machine held 100 batches past the server's 10 s for headers.
    await submitDistinctAddresses(
      COUNT,
      async (batch) => {
        const outcomes = await h.services.intake.submitBatch(who.account, batch);
        expect(outcomes.filter((o) => o.status !== 'created')).toEqual([]);
      },
      (source_ip) => sampleEvent({ source_ip }),
    );
    await h.settled();
    ns = await startFirewallNamespace(h.url);
    home = mkdtempSync(join(tmpdir(), 'tollwatch-firewall-100k-'));
  }, 600_000);
  afterAll(async () => {
    await ns?.close();
    if (home) rmSync(home, { recursive: true, force: true });
    await h?.close();
  });

  // How long each apply takes is measured by bench/suites/firewall.ts (docs/clients.md): here only what the sets hold.
  for (const backend of ['nft', 'ipset'] as const) {
    it(`${backend}: a feed of 100,000 addresses fills the sets, and a full one replaces them`, { timeout: 300_000 }, async () => {
      const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('TOLLWATCH_')));
      const sync = (args: string[]) =>
        ns.run(process.execPath, [MAIN, 'firewall', 'sync', '--backend', backend, '--min-score', '1', '--json', '--timeout', '240', ...args], {
          env: { ...env, TOLLWATCH_URL: ns.url, TOLLWATCH_CLIENT_ID: who.clientId, TOLLWATCH_CLIENT_SECRET: who.clientSecret, TOLLWATCH_CONFIG_DIR: home },
          timeoutMs: 280_000,
        });
      for (const state of ['first.json', 'second.json']) {
        const run = await sync(['--state', join(home, `${backend}-${state}`)]);
        expect(run, run.stderr).toMatchObject({ status: 0, stderr: '' });
        expect(JSON.parse(run.stdout)).toMatchObject({ outcome: 'applied', ipv4: 70_000, ipv6: 30_000, allowed_out: 0, apply_ms: expect.any(Number) });
      }
      const count = (name: string) =>
        backend === 'nft'
          ? ns.run('sh', ['-c', `nft -j list set inet tollwatch ${name} | node -e 'let s="";process.stdin.on("data",(d)=>s+=d).on("end",()=>console.log(JSON.parse(s).nftables[1].set.elem.length))'`])
          : ns.run('sh', ['-c', `ipset list -t ${name} | sed -n 's/^Number of entries: //p'`]);
      expect((await count('tollwatch_v4')).stdout.trim()).toBe('70000');
      expect((await count('tollwatch_v6')).stdout.trim()).toBe('30000');
    });
  }
});

if (missing !== undefined) it.skip(`firewall sync with nft and ipset: ${missing}`, () => {});

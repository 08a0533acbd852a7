import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { firewallNamespaceMissing, firewallToolsMissing, startFirewallNamespace, submitDistinctAddresses } from '../../test/support/firewall-namespace.ts';
import { sampleEvent, saveUnlimitedPlan, startHarness } from '../../test/support/harness.ts';
import { log, printTable, ROOT } from '../support/support.ts';

/**
 * How long `tollwatch-cli firewall sync` takes to put a feed of N addresses (default 100,000, the
 * feed's cap) into the firewall (docs/clients.md, "Blocklists in the firewall"): a server over a
 * fresh store holding one event from each of N distinct addresses (70% IPv4), the CLI in a network
 * namespace of its own (root only), each backend synced `--rounds` times, each round with a state
 * file of its own so that the feed is fetched and applied in full. `apply` is the nft or ipset run
 * alone (the CLI's `apply_ms`), `sync` the whole command (start, token, feed, script, apply);
 * `304` a sync whose ETag still holds. Before them, the feed alone as JSON and as CSV.
 *
 *     node bench/suites/firewall.ts [--addresses 100000] [--rounds 3]
 */
const { values } = parseArgs({ options: { addresses: { type: 'string', default: '100000' }, rounds: { type: 'string', default: '3' } } });
const COUNT = Number(values.addresses);
const ROUNDS = Number(values.rounds);
const MAIN = join(ROOT, 'cli/src/main.ts');

const missing = firewallNamespaceMissing() ?? (firewallToolsMissing().length > 0 ? `missing: ${firewallToolsMissing().join(', ')}` : undefined);
if (missing) {
  log(`firewall bench skipped: ${missing}`);
  process.exit(0);
}

const h = await startHarness();
const home = mkdtempSync(join(tmpdir(), 'tollwatch-firewall-bench-'));
try {
  const who = await h.account({ plan: await saveUnlimitedPlan(h) });
  let started = performance.now();
  // Through intake itself, as POST /api/events/batch stores them (test/clients/firewall.test.ts says why).
  await submitDistinctAddresses(
    COUNT,
    async (batch) => {
      const refused = (await h.services.intake.submitBatch(who.account, batch)).filter((o) => o.status !== 'created');
      if (refused.length > 0) throw new Error(`batch refused: ${JSON.stringify(refused[0])}`);
    },
    (source_ip) => sampleEvent({ source_ip }),
  );
  await h.settled();
  log(`${COUNT.toLocaleString('en')} events from distinct addresses submitted and folded in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  // The feed alone, as the server writes it: JSON (with valid_until) against CSV (without).
  for (const format of ['json', 'csv', 'json', 'csv']) {
    started = performance.now();
    const res = await who.api(`/api/feeds/ip-addresses?format=${format}&min_score=1`);
    const bytes = (await res.arrayBuffer()).byteLength;
    log(`feed as ${format}: HTTP ${res.status}, ${(bytes / 1e6).toFixed(1)} MB in ${Math.round(performance.now() - started)} ms`);
  }
  const ns = await startFirewallNamespace(h.url);
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('TOLLWATCH_')));
  const sync = async (backend: string, state: string) => {
    const began = performance.now();
    const run = await ns.run(process.execPath, [MAIN, 'firewall', 'sync', '--backend', backend, '--min-score', '1', '--json', '--timeout', '600', '--state', join(home, state)], {
      env: { ...env, TOLLWATCH_URL: ns.url, TOLLWATCH_CLIENT_ID: who.clientId, TOLLWATCH_CLIENT_SECRET: who.clientSecret, TOLLWATCH_CONFIG_DIR: home },
      timeoutMs: 600_000,
    });
    if (run.status !== 0) throw new Error(`sync failed: ${run.stderr}`);
    return { ms: Math.round(performance.now() - began), result: JSON.parse(run.stdout) as { outcome: string; ipv4?: number; ipv6?: number; apply_ms?: number } };
  };
  const rows: Array<{ backend: string; round: string; elements: string; apply: string; sync: string }> = [];
  try {
    for (let round = 1; round <= ROUNDS; round++) {
      for (const backend of ['nft', 'ipset']) {
        const { ms, result } = await sync(backend, `${backend}-${round}.json`);
        rows.push({ backend, round: String(round), elements: `${result.ipv4} + ${result.ipv6}`, apply: `${result.apply_ms} ms`, sync: `${ms} ms` });
        log(`${backend} round ${round}: apply ${result.apply_ms} ms, sync ${ms} ms`);
      }
    }
    for (const backend of ['nft', 'ipset']) {
      started = performance.now();
      const { ms, result } = await sync(backend, `${backend}-${ROUNDS}.json`);
      rows.push({ backend, round: '304', elements: result.outcome, apply: '-', sync: `${ms} ms` });
    }
  } finally {
    await ns.close();
  }
  printTable(
    [
      ['backend', -8, (r) => r.backend],
      ['round', 5, (r) => r.round],
      ['IPv4 + IPv6', 16, (r) => r.elements],
      ['apply', 10, (r) => r.apply],
      ['sync', 10, (r) => r.sync],
    ],
    rows,
  );
} finally {
  rmSync(home, { recursive: true, force: true });
  await h.close();
}

/**
 * Makes the upgrade fixture (test/fixtures/upgrade/): a store written by an earlier commit of
 * this repository, and what it held, for test/store/upgrade.test.ts. Run from a checkout of that
 * commit's tree with this repository's node_modules beside it (see the fixture's README):
 *
 *   node make-upgrade-fixture.ts <old-tree> <sqlite|postgres> <out-dir>
 *
 * It drives the old tree's own CLI and server, as an operator of that release would have.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLiteDatabase from 'better-sqlite3';
import pg from 'pg';
import { eventually } from './eventually.ts';

const [tree, store, out] = process.argv.slice(2) as [string, 'sqlite' | 'postgres', string];
const work = mkdtempSync(join(tmpdir(), 'tollwatch-upgrade-'));
const admin = 'postgres://postgres@127.0.0.1:5432/postgres';
const pgName = `tollwatch_upgrade_fixture_${process.pid}`;
const databaseUrl = store === 'sqlite' ? `sqlite:${join(work, 'store.db')}` : `postgres://postgres@127.0.0.1:5432/${pgName}`;
const node = process.execPath;

function cli(...args: string[]): any {
  const run = spawnSync(node, [join(tree, 'bin/tollwatch.js'), '--json', ...args], { env: { ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: 'silent' }, encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`${args.join(' ')}: ${run.stderr}`);
  return run.stdout.trim() ? JSON.parse(run.stdout) : {};
}

if (store === 'postgres') {
  const c = new pg.Client({ connectionString: admin });
  await c.connect();
  await c.query(`create database ${pgName}`);
  await c.end();
}

cli('plans', 'set', 'upgrade_plan', '--may-submit', 'yes', '--lookups', '120/minute', '--submissions', '5000/hour', '--max-clients', '7');
const fleet = cli('accounts', 'create', '--name', 'Fleet (trusted)', '--plan', 'upgrade_plan', '--trusted');
const other = cli('accounts', 'create', '--name', 'Other contributor', '--plan', 'contributor');
const viewer = cli('accounts', 'create', '--name', 'Viewer', '--plan', 'business');
const fleetNode = cli('clients', 'create', '--account', fleet.account_id, '--name', 'fleet node');
const otherNode = cli('clients', 'create', '--account', other.account_id, '--name', 'other node');
const viewerClient = cli('clients', 'create', '--account', viewer.account_id, '--name', 'viewer', '--permissions', 'read:phone-numbers,read:ip-addresses');
const resetClient = cli('clients', 'create', '--account', other.account_id, '--name', 'reset later');
const newSecret = cli('clients', 'reset-secret', resetClient.client_id);
const deleted = cli('clients', 'create', '--account', other.account_id, '--name', 'deleted later');
cli('clients', 'delete', deleted.client_id);
const disabled = cli('accounts', 'create', '--name', 'Disabled', '--plan', 'contributor');
cli('accounts', 'disable', disabled.account_id);

const port = 18000 + (process.pid % 1000);
const url = `http://127.0.0.1:${port}`;
const server = spawn(node, [join(tree, 'src/server.ts')], { env: { ...process.env, DATABASE_URL: databaseUrl, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'error', TOLLWATCH_PUBLIC_URL: url }, stdio: 'inherit' });
await eventually('the old server to be ready', () => fetch(`${url}/readyz`).then((r) => r.status, () => 0), (status) => status === 200, { timeoutMs: 90_000, everyMs: 100 });
async function token(client: { client_id: string; client_secret: string }) {
  const res = await fetch(`${url}/oauth/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ client_id: client.client_id, client_secret: client.client_secret, audience: `${url}/api`, grant_type: 'client_credentials' }) });
  return ((await res.json()) as { access_token: string }).access_token;
}
const log = readFileSync(new URL('../fixtures/sentrypeer_json.log', import.meta.url), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, string>);
const submitted: Record<string, string[]> = { [fleet.account_id]: [], [other.account_id]: [] };
for (const [who, events] of [[fleetNode, log.slice(0, 20)], [otherNode, log.slice(20)]] as const) {
  const bearer = await token(who);
  for (const event of events) {
    const res = await fetch(`${url}/api/events`, { method: 'POST', headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/json' }, body: JSON.stringify(event) });
    if (res.status !== 201) throw new Error(`event: ${res.status} ${await res.text()}`);
    submitted[who.account_id]!.push(event.event_uuid!);
  }
}
const viewerToken = await token(viewerClient);
const lookups: Record<string, unknown> = {};
for (const number of ['+46812118532', '0046812118532', '+441224928978']) {
  const res = await fetch(`${url}/api/phone-numbers/${encodeURIComponent(number)}`, { headers: { authorization: `Bearer ${viewerToken}` } });
  lookups[number] = { status: res.status, body: await res.json() };
}
const jwks = (await (await fetch(`${url}/.well-known/jwks.json`)).json()) as { keys: Array<{ kid: string }> };
server.kill('SIGTERM');
await new Promise((r) => server.once('exit', r));

mkdirSync(out, { recursive: true });
const commit = execFileSync('git', ['-C', tree, 'rev-parse', 'HEAD'], { encoding: 'utf8' }).trim();
writeFileSync(
  join(out, `${store}.expected.json`),
  `${JSON.stringify(
    {
      commit,
      plan: { name: 'upgrade_plan', may_submit: true, lookups: '120/minute', submissions: '5000/hour', max_clients: 7 },
      accounts: { fleet, other, viewer, disabled },
      clients: { fleetNode, otherNode, viewerClient, reset: { ...resetClient, new_secret: newSecret.client_secret }, deleted },
      events: submitted,
      lookups,
      kids: jwks.keys.map((k) => k.kid),
    },
    null,
    2,
  )}\n`,
);
if (store === 'sqlite') {
  const db = new SQLiteDatabase(join(work, 'store.db'));
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
  copyFileSync(join(work, 'store.db'), join(out, 'sqlite-store.db'));
} else {
  const dump = spawnSync('pg_dump', ['--inserts', '--no-owner', '--no-privileges', '--no-comments', databaseUrl], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (dump.status !== 0) throw new Error(dump.stderr);
  // pg_dump's `\restrict` lines are psql meta-commands; the test loads the dump as plain SQL.
  writeFileSync(join(out, 'postgres-store.sql'), dump.stdout.replace(/^\\(un)?restrict .*\n/gm, ''));
  const c = new pg.Client({ connectionString: admin });
  await c.connect();
  await c.query(`drop database ${pgName} with (force)`);
  await c.end();
}
console.log(`wrote the ${store} fixture of ${commit} to ${out}`);

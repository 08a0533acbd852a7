import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { log, ROOT } from '../support/support.ts';
import { writeSentryPeerLog } from '../support/sentrypeer-log.ts';

/**
 * `npx node bench/suites/import.ts [--events 200000] [--batch-size N] [--bulk] [--trusted] [--database URL]`:
 * the throughput of `tollwatch import` (docs/operations.md) on a generated SentryPeer JSON log,
 * run as an operator runs it: the real executable, on a fresh SQLite store unless `--database`
 * names an empty one. Into a new account's own scope, or with `--trusted` into the shared data
 * set (an operator loading a fleet's history). Imports the log, then imports it again (every
 * event a replay, as when an interrupted import is resumed), and prints both results. The log
 * is kept in bench/.data/.
 */
const { values } = parseArgs({
  options: {
    events: { type: 'string', default: '200000' },
    'batch-size': { type: 'string' },
    database: { type: 'string' },
    bulk: { type: 'boolean', default: false },
    trusted: { type: 'boolean', default: false },
  },
});
const events = Number(values.events);
const data = join(ROOT, 'bench/.data');
mkdirSync(data, { recursive: true });
const logPath = join(data, `sentrypeer-${events}.log`);
if (!existsSync(logPath)) {
  log(`writing ${events.toLocaleString('en')} events to ${logPath}`);
  // As skewed as the benchmark's stores: 200,000 numbers, 50,000 addresses (bench/run.ts).
  await writeSentryPeerLog(`${logPath}.tmp`, { events, numbers: 200_000, addresses: 50_000, seed: 1 });
  renameSync(`${logPath}.tmp`, logPath);
}
const folder = values.database ? undefined : mkdtempSync(join(data, 'import-'));
const databaseUrl = values.database ?? `sqlite:${join(folder!, 'store.db')}`;

function tollwatch(...args: string[]): Record<string, unknown> {
  const run = spawnSync(process.execPath, [join(ROOT, 'bin/tollwatch.js'), '--json', ...args], {
    env: { ...process.env, DATABASE_URL: databaseUrl },
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  if (run.status !== 0) throw new Error(`tollwatch ${args.join(' ')} exited ${run.status}`);
  return JSON.parse(run.stdout) as Record<string, unknown>;
}

try {
  const account = tollwatch('accounts', 'create', '--name', 'import bench', '--plan', 'contributor', ...(values.trusted ? ['--trusted'] : []));
  const batch = [...(values['batch-size'] ? ['--batch-size', values['batch-size']] : []), ...(values.bulk ? ['--bulk'] : [])];
  for (const pass of ['first import', 'again (all replays)']) {
    const result = tollwatch('import', '--account', String(account.account_id), ...batch, logPath);
    log(`${pass}: ${JSON.stringify(result)}`);
    console.log(`${pass}: ${Number(result.read).toLocaleString('en')} events in ${result.seconds} s = ${Number(result.events_per_second).toLocaleString('en')} events/s`);
  }
} finally {
  if (folder) rmSync(folder, { recursive: true, force: true });
}

import { writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { binaries } from '../../test/support/private-postgres.ts';
import { startReplicatedCluster } from '../../test/support/replicated-postgres.ts';
import { runCommand } from '../../test/support/run-command.ts';

/**
 * `npx node bench/probes/replication-commit.ts [--clients 8] [--seconds 10] [--rounds 3]`: what a
 * synchronous standby costs a commit, the store alone (docs/scaling.md, "Failover"). On a
 * primary and a streaming standby of its own (test/support/replicated-postgres.ts: run as root),
 * pgbench commits one 1 KB insert per transaction from `--clients` connections for `--seconds`,
 * with synchronous replication (`synchronous_standby_names = '*'`, `synchronous_commit = on`) and
 * asynchronous in turn, `--rounds` times each. Both servers share this machine's cores: the
 * standby's flush and the round trip to it are as cheap here as they will ever be, so this is a
 * floor on the cost, and a standby across a network adds its round trip to every commit.
 */
const { values } = parseArgs({
  options: {
    clients: { type: 'string', default: '8' },
    seconds: { type: 'string', default: '10' },
    rounds: { type: 'string', default: '3' },
  },
});

const cluster = await startReplicatedCluster({ nodes: 2 });
try {
  await cluster.addStandby({ synchronous: true });
  const admin = new pg.Client({ connectionString: cluster.primary.url });
  await admin.connect();
  await admin.query('create table bench_rows (id bigserial primary key, payload text not null)');
  await admin.end();
  const script = join(tmpdir(), `replication-commit-${process.pid}.sql`);
  writeFileSync(script, "insert into bench_rows (payload) values (repeat('x', 1000));\n");
  const rows: Array<{ mode: string; round: number; tps: number; latencyMs: number }> = [];
  for (let round = 1; round <= Number(values.rounds); round++) {
    for (const synchronous of [true, false]) {
      await cluster.setSynchronous(synchronous);
      const run = await runCommand(join(binaries(), 'pgbench'), ['-h', '127.0.0.1', '-p', String(cluster.primary.port), '-U', 'postgres', '-n', '-f', script, '-c', values.clients!, '-j', '2', '-T', values.seconds!, 'postgres'], { timeoutMs: (Number(values.seconds) + 60) * 1000 });
      if (run.status !== 0) throw new Error(`pgbench: ${run.stderr}`);
      const tps = Number(/tps = ([\d.]+)/.exec(run.stdout)?.[1]);
      const latencyMs = Number(/latency average = ([\d.]+) ms/.exec(run.stdout)?.[1]);
      rows.push({ mode: synchronous ? 'synchronous' : 'asynchronous', round, tps: Math.round(tps), latencyMs });
      console.error(`${new Date().toISOString()} round ${round} ${synchronous ? 'synchronous' : 'asynchronous'}: ${Math.round(tps)} commits/s, ${latencyMs} ms average; load average ${loadavg()[0]!.toFixed(1)}`);
    }
  }
  console.table(rows);
} finally {
  cluster.remove();
}

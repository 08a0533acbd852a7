import { execFileSync } from 'node:child_process';
import { chownSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { eventually } from './eventually.ts';
import { asPostgres, binaries } from './private-postgres.ts';
import { runCommand } from './run-command.ts';
import { freePort } from './server-process.ts';

/** One PostgreSQL server of a replicated cluster: a primary, or a standby streaming from one. */
export interface PostgresNode {
  name: string;
  port: number;
  /** A superuser URL of its `postgres` database, straight to it (not through a proxy). */
  url: string;
  data: string;
}

/**
 * A primary and the standbys made from it, as an orchestrator (Patroni, a managed service) runs
 * them, on ports and in a folder of the test's own: the machine's cluster is never touched.
 * Every node gets one of the ports chosen up front, so that a proxy can be told of them all
 * before the later ones exist. Needs root, as private-postgres.ts does.
 */
export interface ReplicatedCluster {
  /** The ports of every node there will be, the first the primary's. */
  ports: number[];
  primary: PostgresNode;
  /** Nodes started and not yet stopped or killed. */
  running(): PostgresNode[];
  /**
   * A standby of the current primary (pg_basebackup -R), streaming; with `synchronous`, the
   * primary then waits for it at every commit (`synchronous_standby_names = '*'`,
   * `synchronous_commit = on`), and this resolves once it is the synchronous standby.
   */
  addStandby(options: { synchronous: boolean }): Promise<PostgresNode>;
  /** Makes the primary wait for its standbys at every commit, or not; resolves once they say so. */
  setSynchronous(synchronous: boolean): Promise<void>;
  /**
   * SIGSTOP of the primary's WAL senders: its standbys receive nothing more, as when a standby
   * falls behind. A synchronous primary's commits then wait; an asynchronous one's do not.
   * killPrimary() kills them too.
   */
  freezeWalSenders(): Promise<void>;
  /** `kill -9` of the primary's postmaster (and of any WAL sender frozen): its backends end on their own a moment later. */
  killPrimary(): void;
  /** A planned stop of the primary (`pg_ctl stop -m fast`): it sends its standbys all its WAL before it exits. */
  stopPrimary(): Promise<void>;
  /** `pg_ctl promote -w`: `standby` becomes the primary once it accepts writes. */
  promote(standby: PostgresNode): Promise<void>;
  /** Stops every node at once and removes the folder. */
  remove(): void;
}

export async function startReplicatedCluster({ nodes = 4, maxConnections = 100 }: { nodes?: number; maxConnections?: number } = {}): Promise<ReplicatedCluster> {
  const bin = binaries();
  const dir = mkdtempSync(join(tmpdir(), 'tollwatch-replicated-'));
  const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }));
  const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }));
  chownSync(dir, uid, gid);
  const ports: number[] = [];
  while (ports.length < nodes) {
    const port = await freePort();
    if (!ports.includes(port)) ports.push(port);
  }
  const node = (index: number): PostgresNode => ({
    name: `node${index}`,
    port: ports[index]!,
    url: `postgres://postgres@127.0.0.1:${ports[index]}/postgres`,
    data: join(dir, `node${index}`),
  });
  const start = (n: PostgresNode) => {
    // cluster_name names the walreceiver in the primary's pg_stat_replication.
    const options = `-p ${n.port} -c listen_addresses=127.0.0.1 -k ${dir} -c shared_buffers=16MB -c max_connections=${maxConnections} -c cluster_name=${n.name}`;
    asPostgres(join(bin, 'pg_ctl'), ['-D', n.data, '-o', options, '-l', join(dir, `${n.name}.log`), '-w', '-t', '60', 'start']);
  };
  const running = new Set<PostgresNode>();
  const stopNow = (n: PostgresNode) => {
    try {
      asPostgres(join(bin, 'pg_ctl'), ['-D', n.data, '-m', 'immediate', '-w', 'stop']);
    } catch {
      // Already down (killed): removed with the folder.
    }
  };
  const asPostgresAsync = async (program: string, args: string[]) => {
    // Asynchronous: the test's clients, in this process, keep sending while it runs.
    const run = await runCommand('runuser', ['-u', 'postgres', '--', join(bin, program), ...args], { timeoutMs: 60_000 });
    if (run.status !== 0) throw new Error(`${program} ${args.join(' ')}: ${run.stderr}`);
  };
  const setting = async (n: PostgresNode, synchronous: boolean) => {
    const client = new pg.Client({ connectionString: n.url });
    await client.connect();
    try {
      await client.query(synchronous ? `alter system set synchronous_standby_names = '*'` : 'alter system reset synchronous_standby_names');
      await client.query('alter system set synchronous_commit = on');
      await client.query('select pg_reload_conf()');
    } finally {
      await client.end();
    }
  };

  let primary = node(0);
  try {
    asPostgres(join(bin, 'initdb'), ['-D', primary.data, '-U', 'postgres', '-A', 'trust', '--no-sync']);
    start(primary);
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  running.add(primary);
  let made = 1;
  const frozen: number[] = [];

  const cluster: ReplicatedCluster = {
    ports,
    get primary() {
      return primary;
    },
    running: () => [...running],
    async addStandby({ synchronous }) {
      if (made >= ports.length) throw new Error(`all ${ports.length} nodes' ports are used`);
      const standby = node(made++);
      // initdb's pg_hba trusts replication connections from 127.0.0.1; -R writes the standby settings.
      await asPostgresAsync('pg_basebackup', ['-h', '127.0.0.1', '-p', String(primary.port), '-U', 'postgres', '-D', standby.data, '-R', '-X', 'stream', '--checkpoint=fast', '--no-sync']);
      // The copy carries the primary's synchronous_standby_names: promoted with it and no standby
      // of its own, every commit would wait for ever. An orchestrator asks for a synchronous
      // standby only where there is one, as addStandby() does.
      const autoConf = join(standby.data, 'postgresql.auto.conf');
      writeFileSync(autoConf, readFileSync(autoConf, 'utf8').split('\n').filter((line) => !line.startsWith('synchronous_standby_names')).join('\n'));
      start(standby);
      running.add(standby);
      await cluster.setSynchronous(synchronous);
      return standby;
    },
    async setSynchronous(synchronous) {
      await setting(primary, synchronous);
      const client = new pg.Client({ connectionString: primary.url });
      await client.connect();
      try {
        await eventually(`the standbys of ${primary.name} streaming ${synchronous ? 'synchronously' : 'asynchronously'}`, async () => {
          const { rows } = await client.query<{ sync_state: string }>('select sync_state from pg_stat_replication');
          return rows.map((row) => row.sync_state);
        }, (states) => states.length > 0 && states.every((state) => state === (synchronous ? 'sync' : 'async')));
      } finally {
        await client.end();
      }
    },
    async freezeWalSenders() {
      const client = new pg.Client({ connectionString: primary.url });
      await client.connect();
      try {
        const { rows } = await client.query<{ pid: number }>('select pid from pg_stat_replication');
        if (rows.length === 0) throw new Error(`${primary.name} has no WAL sender to freeze`);
        for (const { pid } of rows) {
          process.kill(pid, 'SIGSTOP');
          frozen.push(pid);
        }
      } finally {
        await client.end();
      }
    },
    killPrimary() {
      const pid = Number(readFileSync(join(primary.data, 'postmaster.pid'), 'utf8').split('\n')[0]);
      process.kill(pid, 'SIGKILL');
      // A stopped process outlives its postmaster's death, holding its standby's connection open.
      for (const sender of frozen.splice(0)) process.kill(sender, 'SIGKILL');
      running.delete(primary);
    },
    async stopPrimary() {
      await asPostgresAsync('pg_ctl', ['-D', primary.data, '-m', 'fast', '-w', '-t', '60', 'stop']);
      running.delete(primary);
    },
    async promote(standby) {
      await asPostgresAsync('pg_ctl', ['-D', standby.data, '-w', '-t', '60', 'promote']);
      primary = standby;
    },
    remove() {
      try {
        for (const sender of frozen.splice(0)) process.kill(sender, 'SIGKILL');
        for (const n of running) stopNow(n);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
  return cluster;
}

/**
 * What an orchestrator does about a primary that stopped answering: asks it every `everyMs`
 * (`pg_isready`), and after `failures` failed asks in a row promotes `standby`. Resolves with
 * when the promotion began and ended (ms since the epoch).
 */
export async function promoteWhenPrimaryFails(cluster: ReplicatedCluster, standby: PostgresNode, { everyMs = 500, failures = 3 } = {}): Promise<{ promotingAt: number; promotedAt: number }> {
  const isready = join(binaries(), 'pg_isready');
  const watched = cluster.primary;
  let failed = 0;
  for (;;) {
    const run = await runCommand(isready, ['-h', '127.0.0.1', '-p', String(watched.port), '-t', '1'], { timeoutMs: 5000 });
    failed = run.status === 0 ? 0 : failed + 1;
    if (failed >= failures) break;
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
  const promotingAt = Date.now();
  await cluster.promote(standby);
  return { promotingAt, promotedAt: Date.now() };
}

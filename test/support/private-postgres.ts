import { execFileSync } from 'node:child_process';
import { chownSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A PostgreSQL cluster of one test's own, for faults that reach past one database. A tablespace
 * on a full disk makes every checkpoint of its cluster fail ("checkpoint request failed"), and
 * CREATE and DROP DATABASE each ask for one: on the shared server, the disk-full test made a
 * test file running beside it fail to drop its database (CI, stop 33). Needs root (the cluster
 * runs as the `postgres` user), as the small disk does.
 */
export interface PrivateCluster {
  /** A superuser URL for its `postgres` database. */
  adminUrl: string;
  /**
   * Starts a streaming replica of it (pg_basebackup), and answers a superuser URL of the
   * replica's `postgres` database; remove() stops it too.
   */
  startReplica(): Promise<string>;
  /** Promotes the replica started last (`pg_ctl promote -w`): it takes writes of its own from then on. */
  promoteReplica(): void;
  /** Stops it as an operator's fast shutdown does (`pg_ctl stop -m fast`): open connections are cut. */
  stop(): void;
  /** Starts it again on the same port and files. */
  start(): void;
  /** Stops it at once and removes its files. */
  remove(): void;
}

/** The newest PostgreSQL server binaries' folder. */
export function binaries(): string {
  const versions = readdirSync('/usr/lib/postgresql').sort((a, b) => Number(b) - Number(a));
  if (versions.length === 0) throw new Error('no PostgreSQL server binaries under /usr/lib/postgresql');
  return `/usr/lib/postgresql/${versions[0]}/bin`;
}

/** Runs a PostgreSQL program as the `postgres` user (initdb refuses root), waiting for it. */
export function asPostgres(command: string, args: string[]): void {
  execFileSync('runuser', ['-u', 'postgres', '--', command, ...args], { stdio: 'pipe' });
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Whether this process may run clusters of its own: root (they run as `postgres`), with the server binaries. */
export function privateClusterMissing(): string | undefined {
  if (process.getuid?.() !== 0) return 'a private PostgreSQL cluster needs root (it runs as the postgres user)';
  try {
    binaries();
  } catch (err) {
    return (err as Error).message;
  }
  return undefined;
}

/** `maxConnections`: several server processes and their pools need more than the default 30. */
export async function startPrivateCluster({ maxConnections = 30 }: { maxConnections?: number } = {}): Promise<PrivateCluster> {
  const bin = binaries();
  const dir = mkdtempSync(join(tmpdir(), 'tollwatch-cluster-'));
  const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }));
  const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }));
  chownSync(dir, uid, gid);
  const data = join(dir, 'data');
  const port = await freePort();
  const options = `-p ${port} -c listen_addresses=127.0.0.1 -k ${dir} -c shared_buffers=16MB -c max_connections=${maxConnections}`;
  const start = () => asPostgres(join(bin, 'pg_ctl'), ['-D', data, '-o', options, '-l', join(dir, 'log'), '-w', '-t', '60', 'start']);
  try {
    asPostgres(join(bin, 'initdb'), ['-D', data, '-U', 'postgres', '-A', 'trust', '--no-sync']);
    start();
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  const replicas: string[] = [];
  return {
    adminUrl: `postgres://postgres@127.0.0.1:${port}/postgres`,
    async startReplica() {
      const replicaData = join(dir, `replica-${replicas.length}`);
      const replicaPort = await freePort();
      // initdb's pg_hba trusts replication connections from 127.0.0.1; -R writes the standby settings.
      asPostgres(join(bin, 'pg_basebackup'), ['-h', '127.0.0.1', '-p', String(port), '-U', 'postgres', '-D', replicaData, '-R', '-X', 'stream', '--checkpoint=fast', '--no-sync']);
      replicas.push(replicaData);
      const options = `-p ${replicaPort} -c listen_addresses=127.0.0.1 -k ${dir} -c shared_buffers=16MB -c max_connections=30`;
      asPostgres(join(bin, 'pg_ctl'), ['-D', replicaData, '-o', options, '-l', join(dir, `replica-${replicas.length}.log`), '-w', '-t', '60', 'start']);
      return `postgres://postgres@127.0.0.1:${replicaPort}/postgres`;
    },
    promoteReplica() {
      const replica = replicas.at(-1);
      if (!replica) throw new Error('no replica to promote');
      asPostgres(join(bin, 'pg_ctl'), ['-D', replica, '-w', '-t', '60', 'promote']);
    },
    stop() {
      asPostgres(join(bin, 'pg_ctl'), ['-D', data, '-m', 'fast', '-w', '-t', '60', 'stop']);
    },
    start,
    remove() {
      try {
        for (const replica of replicas) {
          try {
            asPostgres(join(bin, 'pg_ctl'), ['-D', replica, '-m', 'immediate', '-w', 'stop']);
          } catch {
            // Removed with the rest below.
          }
        }
        asPostgres(join(bin, 'pg_ctl'), ['-D', data, '-m', 'immediate', '-w', 'stop']);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

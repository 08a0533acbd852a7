import { sql, type Kysely } from 'kysely';
import type { ReplicaProgress } from '../../domain/lookups/replica-reads.ts';
import type { Schema } from '../schema.ts';

/** How often the replica's replay position is read while something waits on it. */
const POLL_MS = 10;

/**
 * How far a PostgreSQL streaming replica (DATABASE_READ_URL) has replayed the primary's WAL:
 * the primary's position now (`pg_current_wal_lsn`), and a wait for the replica's replay
 * position (`pg_last_wal_replay_lsn`) to pass one. The replica is read every POLL_MS only while
 * a wait is pending: an idle instance asks it nothing.
 */
export class PostgresReplicaProgress implements ReplicaProgress {
  private readonly primary: Kysely<Schema>;
  private readonly replica: Kysely<Schema>;
  private waiters: Array<{ position: bigint; resolve(): void }> = [];
  private polling = false;
  private closed = false;

  constructor(primary: Kysely<Schema>, replica: Kysely<Schema>) {
    this.primary = primary;
    this.replica = replica;
  }

  async primaryPosition(): Promise<bigint> {
    const { rows } = await sql<{ lsn: string }>`select pg_current_wal_lsn()::text as lsn`.execute(this.primary);
    return lsnOf(rows[0]!.lsn);
  }

  replayed(position: bigint): Promise<void> {
    return new Promise((resolve) => {
      this.waiters.push({ position, resolve });
      if (!this.polling) void this.poll();
    });
  }

  close(): void {
    this.closed = true;
    for (const waiter of this.waiters) waiter.resolve();
    this.waiters = [];
  }

  private async poll(): Promise<void> {
    this.polling = true;
    try {
      while (this.waiters.length > 0 && !this.closed) {
        let replayed: bigint | undefined;
        try {
          const { rows } = await sql<{ recovering: boolean; lsn: string | null }>`select pg_is_in_recovery() as recovering, pg_last_wal_replay_lsn()::text as lsn`.execute(this.replica);
          // A server that is not replaying reads what is written to it, so nothing lags: a primary
          // named as its own replica (position NULL), or a replica promoted in a failover, whose
          // position stays where its recovery ended, behind every one the primary names from then on.
          replayed = rows[0]?.recovering && rows[0].lsn ? lsnOf(rows[0].lsn) : 2n ** 64n;
        } catch {
          // The replica is away: its readers fail on their own; waiters keep waiting for it.
        }
        if (replayed !== undefined) {
          const done = this.waiters.filter((w) => w.position <= replayed!);
          this.waiters = this.waiters.filter((w) => w.position > replayed!);
          for (const waiter of done) waiter.resolve();
        }
        if (this.waiters.length > 0) await new Promise((resolve) => setTimeout(resolve, POLL_MS));
      }
    } finally {
      this.polling = false;
    }
  }
}

/** `16/B374D848` (two hex halves) as one 64-bit position. */
function lsnOf(text: string): bigint {
  const [high, low] = text.split('/');
  return (BigInt(`0x${high}`) << 32n) | BigInt(`0x${low}`);
}

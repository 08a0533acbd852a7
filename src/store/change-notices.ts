import pg from 'pg';
import type { Logger } from 'pino';
import type { AccessChangeNotices } from '../domain/accounts/access-changes.ts';

/** The channel every instance of one database LISTENs on; NOTIFY reaches only that database's sessions. */
const CHANNEL = 'tollwatch_access_changed';

/** Names the listening session in `pg_stat_activity`, so an operator (or a test) can tell it apart. */
export const LISTENER_APPLICATION_NAME = 'tollwatch-change-notices';

/** The first wait before connecting again after the listening connection was lost; doubled up to the next bound. */
const RECONNECT_FIRST_MS = 250;
/** The longest wait between attempts: a database away for long is tried every 5 s. */
const RECONNECT_MAX_MS = 5000;
/**
 * How often the listening connection is asked whether it still answers. A connection whose
 * peer vanished without closing it (a failover, a dropped network path) would otherwise look
 * alive and deliver nothing; meanwhile the cache bounds are the only bound. 10 s keeps that
 * window short for one tiny query per instance every 10 s.
 */
const HEARTBEAT_MS = 10_000;
/** A heartbeat unanswered this long means the connection is gone. */
const HEARTBEAT_TIMEOUT_MS = 3000;

/**
 * Access-change notices through PostgreSQL's LISTEN/NOTIFY, so that every instance on one
 * database learns of a revocation at once without Redis. Announcing is a NOTIFY on the pool;
 * listening is a connection of its own (a pooled one would be handed to queries), opened on
 * the first `onAccessChange`, connected again after a drop, and LISTENing again each time.
 * Since notices sent while it was away are lost, every reconnection counts as a change.
 */
export class PostgresChangeNotices implements AccessChangeNotices {
  private readonly url: string;
  private readonly pool: pg.Pool;
  private readonly log: Logger | undefined;
  private readonly handlers: Array<() => void> = [];
  private client: pg.Client | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  private retry: NodeJS.Timeout | undefined;
  private retryMs = RECONNECT_FIRST_MS;
  private listening = false;
  private lost = false;
  private closed = false;

  constructor(url: string, pool: pg.Pool, log?: Logger) {
    this.url = url;
    this.pool = pool;
    this.log = log;
  }

  announceAccessChange(): void {
    this.pool.query('select pg_notify($1, $2)', [CHANNEL, String(Date.now())]).catch(() => {});
  }

  async onAccessChange(onChange: () => void): Promise<void> {
    this.handlers.push(onChange);
    if (this.listening) return;
    this.listening = true;
    await this.connect();
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retry);
    clearInterval(this.heartbeat);
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => {});
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    const client = new pg.Client({
      connectionString: this.url,
      application_name: LISTENER_APPLICATION_NAME,
      connectionTimeoutMillis: 2000,
      query_timeout: HEARTBEAT_TIMEOUT_MS,
      keepAlive: true,
    });
    this.client = client;
    client.on('notification', (message) => {
      if (message.channel === CHANNEL) this.changed();
    });
    client.on('error', (err) => this.dropped(client, err));
    client.on('end', () => this.dropped(client, new Error('connection ended')));
    try {
      await client.connect();
      await client.query(`LISTEN ${CHANNEL}`);
    } catch (err) {
      this.dropped(client, err as Error);
      return;
    }
    if (this.client !== client) return;
    this.retryMs = RECONNECT_FIRST_MS;
    this.heartbeat = setInterval(() => {
      client.query('select 1').catch((err: Error) => this.dropped(client, err));
    }, HEARTBEAT_MS);
    this.heartbeat.unref();
    if (this.lost) {
      this.lost = false;
      this.log?.info('listening for access changes again');
      // Whatever was announced while we were not listening never reaches us: forget everything.
      this.changed();
    }
  }

  private changed(): void {
    for (const handler of this.handlers) handler();
  }

  /** The listening connection failed: close it and connect again, each wait longer, up to RECONNECT_MAX_MS. */
  private dropped(client: pg.Client, err: Error): void {
    if (this.client !== client || this.closed) return;
    this.client = undefined;
    clearInterval(this.heartbeat);
    client.removeAllListeners('notification');
    client.on('error', () => {});
    client.end().catch(() => {});
    if (!this.lost) {
      this.lost = true;
      this.log?.warn({ err: err.message }, 'lost the connection listening for access changes: changes made elsewhere reach this instance by the cache bounds until it is back');
      // Announcements may already have been missed.
      this.changed();
    }
    this.retry = setTimeout(() => void this.connect(), this.retryMs);
    this.retry.unref();
    this.retryMs = Math.min(this.retryMs * 2, RECONNECT_MAX_MS);
  }
}

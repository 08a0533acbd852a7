import pg from 'pg';

/**
 * Asks one node, over a connection kept open between checks, whether it is the primary. A new
 * connection per check (a backend forked every 200 ms) took over a second on this loaded
 * machine: the check timed out and HAProxy marked a healthy primary down, cutting every session.
 */
export class PrimaryCheck {
  private client: pg.Client | undefined;
  private readonly port: number;

  constructor(port: number) {
    this.port = port;
  }

  /** Whether the node answers and is not in recovery; false when it cannot be asked. */
  async isPrimary(): Promise<boolean> {
    try {
      if (!this.client) {
        const client = new pg.Client({ host: '127.0.0.1', port: this.port, user: 'postgres', database: 'postgres', connectionTimeoutMillis: 1500, query_timeout: 1500 });
        client.on('error', () => {});
        this.client = client;
        await client.connect();
      }
      const { rows } = await this.client.query<{ recovering: boolean }>('select pg_is_in_recovery() as recovering');
      return rows[0]?.recovering === false;
    } catch {
      const broken = this.client;
      this.client = undefined;
      await broken?.end().catch(() => {});
      return false;
    }
  }

  async close(): Promise<void> {
    await this.client?.end().catch(() => {});
    this.client = undefined;
  }
}

/** Whether the server (or proxy) on `port` answers on a new connection and is not in recovery. */
export async function isPrimary(port: number): Promise<boolean> {
  const check = new PrimaryCheck(port);
  try {
    return await check.isPrimary();
  } finally {
    await check.close();
  }
}

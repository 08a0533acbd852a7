/** The SQLite writer thread stopped while it held a request (writer-thread.ts). */
export const WRITER_DOWN = 'TOLLWATCH_WRITER_DOWN';

/** Store faults that mean "try again shortly", not "this server is broken". */
const UNAVAILABLE_CODES = new Set([
  WRITER_DOWN,
  'SQLITE_BUSY',
  'SQLITE_LOCKED',
  'SQLITE_FULL',
  'SQLITE_IOERR',
  'SQLITE_CANTOPEN',
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  // The store's host name does not resolve just now.
  'ENOTFOUND',
  'EAI_AGAIN',
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now
  '53300', // too_many_connections
  // read_only_sql_transaction: the server answers but takes no writes, a primary demoted while a
  // proxy or an address still leads to it, or one restarted in place and not yet writable. The
  // failover that ends it is the orchestrator's; a new connection then finds the new primary.
  '25006',
  '53100', // disk_full: intake resumes by itself once space returns
]);

/** Whether an error means the store cannot be reached or written just now. */
export function isStoreUnavailable(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && (UNAVAILABLE_CODES.has(code) || code.startsWith('SQLITE_IOERR') || code.startsWith('08'))) return true;
  const message = (error as { message?: unknown } | null)?.message;
  // node-postgres's own words (pg/lib/client.js, pg-pool) for a connection that broke, one that
  // could not be made in time, a server that stopped answering mid-query (the pool's
  // query_timeout), and a client used after its connection failed: the last raised by a ROLLBACK
  // on a client whose server went away mid-transaction (an outage test by a verifier saw it answer 500 once).
  return typeof message === 'string' && /Connection terminated|timeout exceeded when trying to connect|timeout expired|Query read timeout|not queryable/i.test(message);
}

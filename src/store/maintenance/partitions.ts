import { sql, type Kysely } from 'kysely';

/** Months kept ready ahead of the current one, so no event lands in the default partition. */
const MONTHS_AHEAD = 3;

/** `YYYY-MM` of the month `offset` months after the month of `date`. */
function month(date: Date, offset: number): string {
  const d = new Date(Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + offset, 1));
  return d.toISOString().slice(0, 7);
}

/**
 * Creates the monthly partitions of `events` from last month to a few months ahead, and the
 * default partition that catches instants outside them (a node with a wrong clock). Bounds
 * are `event_time` text prefixes: ISO-8601 text sorts as time does. Safe to run from several
 * instances at once.
 */
export async function ensurePartitions(db: Kysely<any>, now: Date): Promise<void> {
  await sql`create table if not exists events_default partition of events default`.execute(db);
  for (let offset = -1; offset <= MONTHS_AHEAD; offset++) {
    const from = month(now, offset);
    const to = month(now, offset + 1);
    const name = `events_${from.replace('-', '_')}`;
    try {
      await sql`create table if not exists ${sql.table(name)} partition of events for values from (${sql.lit(from)}) to (${sql.lit(to)})`.execute(db);
    } catch (err) {
      // Another instance created it between our check and our create: nothing to do.
      if (!/already exists/.test(String((err as Error).message))) throw err;
    }
  }
}

/** The monthly partitions wholly older than `cutoff` (ISO instant), by name. */
export async function partitionsBefore(db: Kysely<any>, cutoff: string): Promise<string[]> {
  const rows = await sql<{ name: string }>`
    select c.relname as name from pg_inherits i
    join pg_class c on c.oid = i.inhrelid join pg_class p on p.oid = i.inhparent
    where p.relname = 'events' and c.relname ~ '^events_[0-9]{4}_[0-9]{2}$'`.execute(db);
  return rows.rows
    .map((r) => r.name)
    .filter((name) => {
      const [year, mon] = name.slice('events_'.length).split('_').map(Number) as [number, number];
      const end = new Date(Date.UTC(year, mon, 1)).toISOString();
      return end <= cutoff;
    })
    .sort();
}

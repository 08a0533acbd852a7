import { sql, type Kysely } from 'kysely';

/*
 * Monthly partitions of `events` as the migrations made them (src/store/maintenance/partitions.ts, commit
 * 68f1c4a), copied so that a change to today's partitioning cannot change an old migration.
 */
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
export async function monthlyPartitions(db: Kysely<any>, now: Date): Promise<void> {
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


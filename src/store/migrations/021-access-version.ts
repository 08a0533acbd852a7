import { sql, type Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';
import type { MigrationCapabilities } from './capabilities.ts';

/** The tables whose rows a process keeps in memory to admit requests: accounts, clients, plans, signing keys. */
const ACCESS_TABLES = ['accounts', 'clients', 'plans', 'signing_keys'];

/** Migration 021_access_version. Frozen: it copies what it needs, and imports nothing of today's code. */
export function migration(caps: MigrationCapabilities): Migration {
  return {
    async up(db: Kysely<any>) {
      // On SQLite a server learns that another process (the operator CLI) changed access from a
      // counter, read every 50 ms. `PRAGMA data_version` counted every other connection's commit,
      // the server's own writer thread's included: each intake commit dropped the credentials and
      // plans it keeps, and lookups read them again. This counter moves only with the tables that
      // admit requests. PostgreSQL servers hear of access changes by LISTEN/NOTIFY instead.
      if (!caps.accessCounter) return;
      await sql`create table access_version (id integer primary key check (id = 1), version integer not null)`.execute(db);
      await sql`insert into access_version (id, version) values (1, 0)`.execute(db);
      for (const table of ACCESS_TABLES) {
        for (const event of ['insert', 'update', 'delete']) {
          await sql`create trigger ${sql.id(`${table}_${event}_access`)} after ${sql.raw(event)} on ${sql.table(table)}
            begin update access_version set version = version + 1 where id = 1; end`.execute(db);
        }
      }
    },
  };
}

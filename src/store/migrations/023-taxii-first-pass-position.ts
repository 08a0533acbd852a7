import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';

/** Migration 023_taxii_first_pass_position. Frozen: it copies what it needs, and imports nothing of today's code. */
export function migration(): Migration {
  return {
    async up(db: Kysely<any>) {
      // A collection's first pass reads every shared row that can score, which at millions of
      // rows takes tens of minutes; its position was stored only at its end, so a process
      // stopped part-way (a deploy, a restart) began it again from the start, and restarts more
      // often than a pass lasts kept a collection from ever being published whole. Where the
      // pass stands is stored with each page it publishes: the page to read next, the latest
      // change when it began (where the passes after it read changes from) and the hour it
      // scored at (a pass resumed in a later hour is swept again at its end).
      for (const column of ['first_pass_next', 'first_pass_through', 'first_pass_hour']) {
        await db.schema.alterTable('taxii_publication').addColumn(column, 'text').execute();
      }
    },
  };
}

import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';

/*
 * The normaliser as this migration's release had it (commit d319889), copied so that the
 * backfill writes what that release wrote, whatever today's normaliser does.
 */
const SEPARATORS = /[\s\-.()]/g;
const DIALLABLE = /^\+?[0-9A-Za-z*#]{1,64}$/;

/**
 * Normalises a number from a lookup path or an event's `called_number` (docs/api.md §7, as it read then): trims,
 * reduces `tel:`/`sip:`/`sips:` URIs to their user part, drops visual separators. Null when
 * what remains is not a diallable string.
 */
function normalisePhoneNumber(input: string): { written: string; key: string } | null {
  let value = input.trim();
  const uri = /^(tel|sips?):/i.exec(value);
  if (uri) {
    value = value.slice(uri[0].length);
    if (uri[1]!.toLowerCase() !== 'tel') {
      const at = value.indexOf('@');
      if (at >= 0) value = value.slice(0, at);
    }
    // URI parameters (`;user=phone`, `;phone-context=…`) and headers (`?…`) are not the number.
    value = value.split(/[;?]/, 1)[0] ?? '';
  }
  value = value.replace(SEPARATORS, '');
  if (!DIALLABLE.test(value)) return null;
  return { written: value, key: internationalKey(value) ?? value.toLowerCase() };
}

/**
 * `+CC…`, `00CC…` and `011CC…` are one number dialled with different exit codes. `011` is the
 * North American exit code; a few national numbers elsewhere also begin with 011 (e.g. UK
 * area codes 0113–0118), but the contract decides that attackers' test calls, which dial
 * internationally, are what matters, so 011 is read as an exit code.
 */
function internationalKey(value: string): string | null {
  for (const prefix of ['+', '00', '011']) {
    if (value.startsWith(prefix)) {
      const rest = value.slice(prefix.length);
      if (/^[0-9]+$/.test(rest) && !(prefix === '00' && rest.startsWith('0'))) return `+${rest}`;
      return null;
    }
  }
  return null;
}

/** Migration 003_event_number_written. Frozen: it copies what it needs, and imports nothing of today's code. */
export function migration(): Migration {
  return {
    async up(db: Kysely<any>) {
      // The written form of called_number, so aggregates can be rebuilt from events in SQL.
      await db.schema.alterTable('events').addColumn('number_written', 'text').execute();
      // Backfill in pages, in JavaScript, because normalisation is domain code.
      let after = 0;
      for (;;) {
        const rows: Array<{ id: number; called_number: string }> = await db
          .selectFrom('events')
          .select(['id', 'called_number'])
          .where('number_key', 'is not', null)
          .where('id', '>', after)
          .orderBy('id')
          .limit(5000)
          .execute();
        if (rows.length === 0) break;
        for (const row of rows) {
          const written = normalisePhoneNumber(row.called_number)?.written ?? null;
          await db.updateTable('events').set({ number_written: written }).where('id', '=', row.id).execute();
        }
        after = Number(rows.at(-1)!.id);
      }
    },
  };
}

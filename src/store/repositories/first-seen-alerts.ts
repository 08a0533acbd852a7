import { sql, type Kysely, type RawBuilder, type Transaction } from 'kysely';
import { numberSubject } from '../../domain/alerts/alerts.ts';
import { SHARED_SCOPE } from '../../domain/visibility.ts';
import { chunks } from '../fold/ingest-writes.ts';
import type { Schema } from '../schema.ts';

/** A number counted in a scope's aggregates by an ingest (or, later, a fold) transaction. */
export interface NumberSighting {
  /** The aggregate scope: an account id, or the shared data set (never alerted: it is no one account's). */
  scope: string;
  numberKey: string;
  /** The earliest event time of the number among the events being counted. */
  firstSeen: string;
}

/**
 * The table holding one row per scope and number: a number without a row in its account's
 * scope is new to that account. The one name to change if that table is reshaped.
 */
const NUMBER_AGGREGATES = 'number_aggregates';

/**
 * A query naming an entry of the account's own allowlist (migration 028) that covers the number:
 * the number itself, or a prefix of its key. An allowlisted number raises no alert (docs/api.md
 * §12, §16). In SQL, beside the existence test, so the fold's transaction needs nothing of memory.
 */
function allowlisted(accountId: RawBuilder<unknown>, numberKey: RawBuilder<unknown>) {
  return sql`select 1 from allowlist_entries a where a.owner = ${accountId}
    and ((a.kind = 'phone_number' and a.value = ${numberKey}) or (a.kind = 'number_prefix' and substr(${numberKey}, 1, length(a.value)) = a.value))`;
}

/** Rows per first-seen statement: 7 parameters each, well inside both stores' limits. */
const SIGHTINGS_PER_STATEMENT = 200;

/**
 * `number.first_seen` (docs/api.md §12): call it in the transaction that adds events to the
 * aggregates, BEFORE the number rows are written, with every number those events carry (or
 * only those known to be new: the existence test then drops nothing). It enqueues, in that
 * same transaction, an alert for each number with no NUMBER_AGGREGATES row yet in its account's
 * scope, for accounts with an integration subscribed to the type. One
 * statement per 200 numbers whatever the number of accounts: the existence test, the
 * subscription test and the write are one `INSERT … SELECT`. A concurrent transaction that
 * sights the same new number collides on the outbox's unique key and writes nothing.
 */
export async function enqueueFirstSeen(trx: Transaction<Schema> | Kysely<Schema>, sightings: NumberSighting[]): Promise<void> {
  const scopes = [...new Set(sightings.map((s) => s.scope).filter((scope) => scope !== SHARED_SCOPE))];
  if (scopes.length === 0) return;
  // Most folds carry numbers of accounts with no such integration: one indexed read tells,
  // and spares them the statements below (measured: most of a fold step's SQL time).
  const subscribed = new Set(
    (
      await trx
        .selectFrom('integrations')
        .select('account_id')
        .where('account_id', 'in', scopes)
        .where('confirmed_at', 'is not', null)
        .where('disabled_at', 'is', null)
        .where('alert_types', 'like', '%number.first_seen%')
        .execute()
    ).map((r) => r.account_id),
  );
  const own = sightings.filter((s) => subscribed.has(s.scope));
  const createdAt = new Date().toISOString();
  for (const chunk of chunks(own, SIGHTINGS_PER_STATEMENT)) {
    const rows = chunk.map((s) => {
      const subject = numberSubject(s.numberKey);
      const data = JSON.stringify({ phone_number: s.numberKey, first_seen: s.firstSeen });
      // Casts name the parameters' types: PostgreSQL cannot infer them in a bare SELECT list.
      return sql`select cast(${`msg_${crypto.randomUUID()}`} as text) as id, cast(${s.scope} as text) as account_id, cast(${s.numberKey} as text) as number_key,
        cast(${subject} as text) as subject, cast(${`number.first_seen|${subject}`} as text) as dedup_key, cast(${data} as text) as data, cast(${createdAt} as text) as created_at`;
    });
    await sql`insert into alerts (id, account_id, type, subject, dedup_key, data, created_at, state)
      select v.id, v.account_id, 'number.first_seen', v.subject, v.dedup_key, v.data, v.created_at, 'new'
      from (${sql.join(rows, sql` union all `)}) as v
      where exists (select 1 from integrations i where i.account_id = v.account_id and i.confirmed_at is not null and i.disabled_at is null and i.alert_types like '%number.first_seen%')
        and not exists (select 1 from ${sql.table(NUMBER_AGGREGATES)} s where s.scope = v.account_id and s.number_key = v.number_key)
        and not exists (${allowlisted(sql`v.account_id`, sql`v.number_key`)})
      on conflict (account_id, dedup_key) do nothing`.execute(trx);
  }
}

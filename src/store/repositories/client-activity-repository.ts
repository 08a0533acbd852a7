import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { ClientActivityRepository, ClientUses } from '../../domain/accounts/client-activity.ts';
import { chunks } from '../fold/ingest-writes.ts';
import type { Schema } from '../schema.ts';

/**
 * Clients per statement: five parameters each, well inside both stores' limits. A flush holds
 * the clients used within its interval, so one statement is the rule; more only past this.
 */
const CLIENTS_PER_STATEMENT = 500;

/** The clients' last uses in the SQL store (migration 017). */
export class SqlClientActivityRepository implements ClientActivityRepository {
  private readonly db: Kysely<Schema>;

  constructor(db: Kysely<Schema>) {
    this.db = db;
  }

  /**
   * One `UPDATE … FROM (VALUES …)` for the lot. Each time and its address are written together,
   * and only over an earlier time: another instance may have flushed a later use meanwhile, and
   * the latest one wins whatever order the flushes come in. A kind not seen is NULL in the list,
   * which no comparison takes. Times are ISO 8601 in UTC, which compare as text.
   */
  async recordUses(uses: ClientUses[]): Promise<void> {
    for (const chunk of chunks(uses, CLIENTS_PER_STATEMENT)) {
      // Casts name the parameters' types, which PostgreSQL cannot infer for a column of NULLs.
      const rows = chunk.map(
        (u) => sql`(cast(${u.clientId} as text), cast(${u.token?.at ?? null} as text), cast(${u.token?.address ?? null} as text), cast(${u.call?.at ?? null} as text), cast(${u.call?.address ?? null} as text))`,
      );
      const newer = (at: RawBuilder<unknown>, held: RawBuilder<unknown>, value: RawBuilder<unknown>, kept: RawBuilder<unknown>) =>
        sql`case when ${at} > coalesce(${held}, '') then ${value} else ${kept} end`;
      const [tokenAt, tokenAddress, callAt, callAddress] = [sql.ref('v.token_at'), sql.ref('v.token_address'), sql.ref('v.call_at'), sql.ref('v.call_address')];
      const [usedAt, usedFrom, calledAt, calledFrom] = [sql.ref('clients.last_used_at'), sql.ref('clients.last_token_address'), sql.ref('clients.last_call_at'), sql.ref('clients.last_call_address')];
      await sql`with v (client_id, token_at, token_address, call_at, call_address) as (values ${sql.join(rows)})
        update clients set
          last_used_at = ${newer(tokenAt, usedAt, tokenAt, usedAt)},
          last_token_address = ${newer(tokenAt, usedAt, tokenAddress, usedFrom)},
          last_call_at = ${newer(callAt, calledAt, callAt, calledAt)},
          last_call_address = ${newer(callAt, calledAt, callAddress, calledFrom)}
        from v
        where clients.client_id = v.client_id`.execute(this.db);
    }
  }
}

import type { Kysely, Selectable } from 'kysely';
import type { Plan, PlansRepository } from '../../domain/accounts/plans.ts';
import type { PlansTable, Schema } from '../schema.ts';

/** Plans in the SQL store. */
export class SqlPlansRepository implements PlansRepository {
  private readonly db: Kysely<Schema>;

  constructor(db: Kysely<Schema>) {
    this.db = db;
  }

  async list(): Promise<Plan[]> {
    const rows = await this.db.selectFrom('plans').selectAll().orderBy('name').execute();
    return rows.map(toPlan);
  }

  async save(plan: Plan): Promise<void> {
    const values = {
      may_submit: plan.maySubmit ? 1 : 0,
      lookups_limit: plan.lookups.limit,
      lookups_window: plan.lookups.windowSeconds,
      submissions_limit: plan.submissions?.limit ?? null,
      submissions_window: plan.submissions?.windowSeconds ?? null,
      max_clients: plan.maxClients,
      event_reads_limit: plan.eventReads.limit,
      event_reads_window: plan.eventReads.windowSeconds,
    };
    await this.db
      .insertInto('plans')
      .values({ name: plan.name, ...values })
      .onConflict((oc) => oc.column('name').doUpdateSet(values))
      .execute();
  }
}

function toPlan(row: Selectable<PlansTable>): Plan {
  return {
    name: row.name,
    maySubmit: row.may_submit === 1,
    lookups: { limit: row.lookups_limit, windowSeconds: row.lookups_window },
    submissions:
      row.submissions_limit !== null && row.submissions_window !== null
        ? { limit: row.submissions_limit, windowSeconds: row.submissions_window }
        : null,
    maxClients: row.max_clients,
    eventReads: { limit: row.event_reads_limit, windowSeconds: row.event_reads_window },
  };
}

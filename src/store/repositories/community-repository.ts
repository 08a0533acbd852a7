import { sql, type Kysely } from 'kysely';
import type { AccountCounts, BoardRepository } from '../../domain/accounts/contributors-board.ts';
import type { ContributorRequest, ContributorRequestsRepository, ContributorRequestStatus } from '../../domain/accounts/contributor-requests.ts';
import type { Schema } from '../schema.ts';

/** Requests for the contributor plan, in the SQL store (migration 032). */
export class SqlContributorRequestsRepository implements ContributorRequestsRepository {
  private readonly db: Kysely<Schema>;

  constructor(db: Kysely<Schema>) {
    this.db = db;
  }

  async insert(request: ContributorRequest): Promise<boolean> {
    // The partial unique index holds one open request per account: a second is no row.
    const result = await this.db.insertInto('contributor_requests').values(request).onConflict((oc) => oc.doNothing()).executeTakeFirst();
    return Number(result.numInsertedOrUpdatedRows ?? 0n) > 0;
  }

  find(requestId: string): Promise<ContributorRequest | undefined> {
    return this.db.selectFrom('contributor_requests').selectAll().where('request_id', '=', requestId).executeTakeFirst();
  }

  latestOf(accountId: string): Promise<ContributorRequest | undefined> {
    return this.db.selectFrom('contributor_requests').selectAll().where('account_id', '=', accountId).orderBy('created_at', 'desc').orderBy('request_id').limit(1).executeTakeFirst();
  }

  list(status?: ContributorRequestStatus): Promise<ContributorRequest[]> {
    let query = this.db.selectFrom('contributor_requests').selectAll().orderBy('created_at').orderBy('request_id');
    if (status) query = query.where('status', '=', status);
    return query.execute();
  }

  async decide(requestId: string, decision: { status: 'approved' | 'declined'; reason: string | null; at: string; by: string }): Promise<boolean> {
    const result = await this.db
      .updateTable('contributor_requests')
      .set({ status: decision.status, reason: decision.reason, decided_at: decision.at, decided_by: decision.by })
      .where('request_id', '=', requestId)
      .where('status', '=', 'open')
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }
}

/** The contributors' board: its aliases, and counts read from `events` (migration 032's index). */
export class SqlBoardRepository implements BoardRepository {
  private readonly db: Kysely<Schema>;

  constructor(db: Kysely<Schema>) {
    this.db = db;
  }

  async setAlias(accountId: string, alias: string, aliasKey: string, at: string): Promise<boolean> {
    const holder = await this.holderOf(aliasKey);
    if (holder !== undefined && holder !== accountId) return false;
    try {
      await this.db
        .insertInto('board_aliases')
        .values({ account_id: accountId, alias, alias_key: aliasKey, created_at: at })
        .onConflict((oc) => oc.column('account_id').doUpdateSet({ alias, alias_key: aliasKey }))
        .execute();
      return true;
    } catch (err) {
      // Another account took the alias between the look and the write.
      if ((await this.holderOf(aliasKey)) !== accountId) return false;
      throw err;
    }
  }

  private async holderOf(aliasKey: string): Promise<string | undefined> {
    const row = await this.db.selectFrom('board_aliases').select('account_id').where('alias_key', '=', aliasKey).executeTakeFirst();
    return row?.account_id;
  }

  async removeAlias(accountId: string): Promise<boolean> {
    const result = await this.db.deleteFrom('board_aliases').where('account_id', '=', accountId).executeTakeFirst();
    return result.numDeletedRows > 0n;
  }

  async aliasOf(accountId: string): Promise<string | undefined> {
    const row = await this.db.selectFrom('board_aliases').select('alias').where('account_id', '=', accountId).executeTakeFirst();
    return row?.alias;
  }

  async aliases(): Promise<Map<string, string>> {
    const rows = await this.db.selectFrom('board_aliases').select(['account_id', 'alias']).execute();
    return new Map(rows.map((r) => [r.account_id, r.alias]));
  }

  async countsByAccount(accountIds: readonly string[], since: string): Promise<AccountCounts[]> {
    if (accountIds.length === 0) return [];
    // One range of (account_id, event_time, number_key) per account: the index answers alone.
    const rows = await this.db
      .selectFrom('events')
      .select(['account_id', sql<number | string>`count(*)`.as('events'), sql<number | string>`count(distinct number_key)`.as('numbers')])
      .where('account_id', 'in', [...accountIds])
      .where('event_time', '>=', since)
      .groupBy('account_id')
      .execute();
    return rows.map((r) => ({ account_id: r.account_id, events: Number(r.events), numbers: Number(r.numbers) }));
  }

  async distinctNumbers(accountIds: readonly string[], since: string): Promise<number> {
    if (accountIds.length === 0) return 0;
    const row = await this.db
      .selectFrom('events')
      .select(sql<number | string>`count(distinct number_key)`.as('numbers'))
      .where('account_id', 'in', [...accountIds])
      .where('event_time', '>=', since)
      .executeTakeFirst();
    return Number(row?.numbers ?? 0);
  }
}

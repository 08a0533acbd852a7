import type { Kysely, Selectable } from 'kysely';
import type { Account } from '../../domain/accounts/accounts.ts';
import type { IngestUrl, IngestUrlsRepository, StoredIngestUrl } from '../../domain/events/ingest-urls.ts';
import type { IngestUrlsTable, Schema } from '../schema.ts';

/** The columns of an ingest URL its owner may see: all but the secret's hash. */
const VIEW_COLUMNS = ['id', 'account_id', 'name', 'created_at', 'last_used_at', 'revoked_at'] as const;

/** Node ingest URLs in the SQL store. */
export class SqlIngestUrlsRepository implements IngestUrlsRepository {
  private readonly db: Kysely<Schema>;

  constructor(db: Kysely<Schema>) {
    this.db = db;
  }

  async insert(url: StoredIngestUrl): Promise<void> {
    await this.db.insertInto('ingest_urls').values(url).execute();
  }

  async find(id: string): Promise<IngestUrl | undefined> {
    return this.db.selectFrom('ingest_urls').select(VIEW_COLUMNS).where('id', '=', id).executeTakeFirst();
  }

  async list(accountId: string): Promise<IngestUrl[]> {
    return this.db
      .selectFrom('ingest_urls')
      .select(VIEW_COLUMNS)
      .where('account_id', '=', accountId)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
  }

  async revoke(id: string, at: string): Promise<boolean> {
    const result = await this.db
      .updateTable('ingest_urls')
      .set({ revoked_at: at })
      .where('id', '=', id)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  /** One indexed read joining the account, so its disabled flag and plan are as of this request. */
  async findBySecretHash(secretHash: string): Promise<{ ingestUrl: IngestUrl; account: Account } | undefined> {
    const row = await this.db
      .selectFrom('ingest_urls as u')
      .innerJoin('accounts as a', 'a.account_id', 'u.account_id')
      .select([
        'u.id',
        'u.account_id',
        'u.name',
        'u.created_at',
        'u.last_used_at',
        'u.revoked_at',
        'a.name as account_name',
        'a.plan as account_plan',
        'a.trusted as account_trusted',
        'a.disabled as account_disabled',
        'a.created_at as account_created_at',
      ])
      .where('u.secret_hash', '=', secretHash)
      .executeTakeFirst();
    if (!row) return undefined;
    return {
      ingestUrl: viewOf(row),
      account: {
        account_id: row.account_id,
        name: row.account_name,
        plan: row.account_plan,
        trusted: row.account_trusted === 1,
        disabled: row.account_disabled === 1,
        created_at: row.account_created_at,
      },
    };
  }

  async recordUse(id: string, at: string, notBefore: string): Promise<void> {
    // Conditional, so instances that each decided to write a use cost one real write at most.
    await this.db
      .updateTable('ingest_urls')
      .set({ last_used_at: at })
      .where('id', '=', id)
      .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', notBefore)]))
      .execute();
  }
}

function viewOf(row: Pick<Selectable<IngestUrlsTable>, (typeof VIEW_COLUMNS)[number]>): IngestUrl {
  return {
    id: row.id,
    account_id: row.account_id,
    name: row.name,
    created_at: row.created_at,
    last_used_at: row.last_used_at,
    revoked_at: row.revoked_at,
  };
}

import type { Kysely, Selectable } from 'kysely';
import type { Account, AccountsRepository, Client } from '../../domain/accounts/accounts.ts';
import { isPermission, type Permission } from '../../domain/accounts/permissions.ts';
import type { AccountsTable, ClientsTable, Schema } from '../schema.ts';

/** Accounts and clients in the SQL store. */
export class SqlAccountsRepository implements AccountsRepository {
  private readonly db: Kysely<Schema>;

  constructor(db: Kysely<Schema>) {
    this.db = db;
  }

  async insertAccount(account: Account): Promise<void> {
    await this.db
      .insertInto('accounts')
      .values({ ...account, trusted: account.trusted ? 1 : 0, disabled: account.disabled ? 1 : 0 })
      .execute();
  }

  async findAccount(accountId: string): Promise<Account | undefined> {
    const row = await this.db.selectFrom('accounts').selectAll().where('account_id', '=', accountId).executeTakeFirst();
    return row && toAccount(row);
  }

  async listAccounts(): Promise<Account[]> {
    const rows = await this.db.selectFrom('accounts').selectAll().orderBy('created_at').orderBy('account_id').execute();
    return rows.map(toAccount);
  }

  async updateAccount(accountId: string, patch: Partial<Pick<Account, 'plan' | 'trusted'>>): Promise<boolean> {
    const values: { plan?: string; trusted?: number } = {};
    if (patch.plan !== undefined) values.plan = patch.plan;
    if (patch.trusted !== undefined) values.trusted = patch.trusted ? 1 : 0;
    const result = await this.db.updateTable('accounts').set(values).where('account_id', '=', accountId).executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  async setDisabled(accountId: string, disabled: boolean): Promise<boolean> {
    // One transaction: a flag set without the versions raised would let a later enable revive
    // the tokens, and versions raised without the flag would leave the account open.
    return this.db.transaction().execute(async (trx) => {
      // A closing account (account-erasure.ts) is never enabled again.
      const result = await trx.updateTable('accounts').set({ disabled: disabled ? 1 : 0 }).where('account_id', '=', accountId).where('closing_at', 'is', null).executeTakeFirst();
      if (result.numUpdatedRows === 0n) return false;
      if (disabled) {
        await trx
          .updateTable('clients')
          .set((eb) => ({ secret_version: eb('secret_version', '+', 1) }))
          .where('account_id', '=', accountId)
          .execute();
      }
      return true;
    });
  }

  async insertClient(client: Client): Promise<void> {
    await this.db
      .insertInto('clients')
      .values({ ...client, permissions: client.permissions.join(' ') })
      .execute();
  }

  async findClient(clientId: string): Promise<Client | undefined> {
    const row = await this.db.selectFrom('clients').selectAll().where('client_id', '=', clientId).executeTakeFirst();
    return row && toClient(row);
  }

  async listClients(accountId: string): Promise<Client[]> {
    const rows = await this.db
      .selectFrom('clients')
      .selectAll()
      .where('account_id', '=', accountId)
      .orderBy('created_at')
      .orderBy('client_id')
      .execute();
    return rows.map(toClient);
  }

  async countClients(accountId: string): Promise<number> {
    const row = await this.db
      .selectFrom('clients')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('account_id', '=', accountId)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  async replaceSecret(clientId: string, secretHash: string): Promise<number | undefined> {
    const row = await this.db
      .updateTable('clients')
      .set((eb) => ({ secret_hash: secretHash, secret_version: eb('secret_version', '+', 1) }))
      .where('client_id', '=', clientId)
      .returning('secret_version')
      .executeTakeFirst();
    return row?.secret_version;
  }

  async deleteClient(clientId: string): Promise<boolean> {
    const result = await this.db.deleteFrom('clients').where('client_id', '=', clientId).executeTakeFirst();
    return result.numDeletedRows > 0n;
  }
}

function toAccount({ closing_at: _closing, closing_counts: _counts, ...row }: Selectable<AccountsTable>): Account {
  return { ...row, trusted: row.trusted === 1, disabled: row.disabled === 1 };
}

function toClient(row: Selectable<ClientsTable>): Client {
  const permissions = row.permissions.split(' ').filter(isPermission) as Permission[];
  return { ...row, permissions };
}

import { AccountClosing } from '../domain/accounts/account-closing.ts';
import { AccountExports } from '../domain/accounts/account-export.ts';
import { SqlAccountErasure } from '../store/repositories/account-erasure.ts';
import { SqlAccountExportReader } from '../store/repositories/account-export-reads.ts';
import type { AuthAssembly } from './auth.ts';
import type { Foundation } from './foundation.ts';

/** Owners leaving with their data: an account's export, and its closing and erasure. */
export interface LeavingAssembly {
  accountExports: AccountExports;
  accountClosing: AccountClosing;
}

export function assembleLeaving(base: Foundation, auth: Pick<AuthAssembly, 'accounts' | 'credentials'>): LeavingAssembly {
  const { database, audit } = base;
  const accountClosing = new AccountClosing(new SqlAccountErasure(database.db, database.caps), () => {
    // This instance forgets at once; the others when the notice reaches them.
    auth.credentials.clear();
    base.announce();
  });
  const closing = async (accountId: string) => (await accountClosing.progress(accountId)) !== undefined;
  return { accountExports: new AccountExports(new SqlAccountExportReader(database.db), auth.accounts, audit, closing), accountClosing };
}

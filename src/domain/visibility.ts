import type { Account } from './accounts/accounts.ts';

/** The aggregate scope of the shared data set: trusted accounts' events and operator imports. */
export const SHARED_SCOPE = '*shared*';

/** Where an account's submitted events are counted (docs/api.md §6). */
export function writeScopeOf(account: Pick<Account, 'account_id' | 'trusted'>): string {
  return account.trusted ? SHARED_SCOPE : account.account_id;
}

/** What an account's lookups may read: the shared data set and its own events, never another's. */
export function readScopesOf(account: Pick<Account, 'account_id' | 'trusted'>): string[] {
  return account.trusted ? [SHARED_SCOPE] : [SHARED_SCOPE, account.account_id];
}

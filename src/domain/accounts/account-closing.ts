import { ServiceError } from '../errors.ts';

/** One batch erased: the table and how many of its rows; `busy` when another process is erasing, `done` when only the account row is left. */
export type ErasedBatch = { table: string; rows: number } | 'busy' | 'done';

/** How far a closing account's erasure has come. */
export interface ClosingProgress {
  closingSince: string;
  /** Rows erased so far, per table. */
  erased: Record<string, number>;
}

/** What the closing's audit entry keeps: no name, no address, only who closed it (`operator` or `owner`) and the counts. */
export interface ClosingRecord extends ClosingProgress {
  by: string;
}

/** Where closing accounts are marked and erased (src/store/repositories/account-erasure.ts lists every table). */
export interface AccountErasureStore {
  /**
   * In one transaction: the account disabled and marked closing, every client's token version
   * raised, every session of its users ended. False when there is no such account or it is
   * already closing.
   */
  beginClosing(accountId: string, by: string, at: string): Promise<boolean>;
  /** Accounts marked closing and not yet erased, the oldest first. */
  closingAccounts(): Promise<string[]>;
  /** Erases the next batch of a closing account's rows, in its own transaction; `done` at once for an account not marked closing. */
  eraseBatch(accountId: string): Promise<ErasedBatch>;
  /**
   * Deletes the account row and writes the `account.closed` audit entry in one transaction: the
   * record, `again` when rows came in since the last batch, undefined when another process
   * finished it (or holds the erasure).
   */
  finish(accountId: string): Promise<ClosingRecord | 'again' | undefined>;
  progress(accountId: string): Promise<ClosingProgress | undefined>;
}

/**
 * Closing an account (docs/guarantees.md, "Leaving"): refused everywhere at once, then erased in
 * batches. The mark comes first and goes last, so a crash between leaves an account that still
 * refuses everything and that the next `finishAll` (at start and every maintenance pass) erases.
 */
export class AccountClosing {
  private readonly store: AccountErasureStore;
  private readonly announceAccessChange: () => void;
  private readonly running = new Map<string, Promise<ClosingRecord | undefined>>();

  /** `announceAccessChange` tells every instance to forget the clients and accounts it keeps. */
  constructor(store: AccountErasureStore, announceAccessChange: () => void) {
    this.store = store;
    this.announceAccessChange = announceAccessChange;
  }

  /**
   * Marks the account closing (its tokens, ingest URLs and sessions refused from this moment on
   * every instance). `not_found` when there is no such account, or it is closing already.
   */
  async begin(accountId: string, by: 'operator' | 'owner'): Promise<void> {
    // A closing account is as good as gone: closing it again answers as an unknown one.
    if (!(await this.store.beginClosing(accountId, by, new Date().toISOString()))) throw new ServiceError('not_found', 'no such account');
    this.announceAccessChange();
  }

  /** Erases a closing account to the end; its audit record, or undefined if another process finished it. */
  finish(accountId: string): Promise<ClosingRecord | undefined> {
    // One erasure per account in this process; other processes take turns by the store's lock.
    const under = this.running.get(accountId);
    if (under) return under;
    const work = this.eraseAll(accountId).finally(() => this.running.delete(accountId));
    this.running.set(accountId, work);
    return work;
  }

  /** Finishes every account left closing (a crash, a restart mid-way); what it finished. */
  async finishAll(): Promise<ClosingRecord[]> {
    const done: ClosingRecord[] = [];
    for (const accountId of await this.store.closingAccounts()) {
      const record = await this.finish(accountId);
      if (record) done.push(record);
    }
    return done;
  }

  progress(accountId: string): Promise<ClosingProgress | undefined> {
    return this.store.progress(accountId);
  }

  private async eraseAll(accountId: string): Promise<ClosingRecord | undefined> {
    for (;;) {
      const batch = await this.store.eraseBatch(accountId);
      if (batch === 'busy') return undefined;
      if (batch !== 'done') continue;
      const finished = await this.store.finish(accountId);
      if (finished !== 'again') return finished;
    }
  }
}

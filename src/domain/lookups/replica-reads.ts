/**
 * Lookups over a read replica (DATABASE_READ_URL, docs/api.md §7): a replica replays the
 * primary's commits a little later, so an aggregate the fold just changed may still read as it
 * was there. Two rules keep lookups right:
 *
 * - an account's own lookups read the primary from the moment the fold counts its events until
 *   the replica has replayed that fold: "at once" holds with a replica too;
 * - a key the fold changed is dropped from the instances' memory of lookups again once the
 *   replica has replayed the change, so an answer read from the replica before it had is not
 *   kept for the memory's whole life (TOLLWATCH_LOOKUP_CACHE_MS): the memory can live as long
 *   as without a replica, and the replica adds lookup capacity instead of costing it.
 */

/** Where a replica stands against its primary, in WAL positions. */
export interface ReplicaProgress {
  /** The primary's position now: every commit acknowledged before the call is at or before it. */
  primaryPosition(): Promise<bigint>;
  /** Resolves once the replica has replayed up to `position`. */
  replayed(position: bigint): Promise<void>;
  close(): void;
}

/** What the guard drops from lookups' memory, once more, when the replica has caught up. */
export type Forget<T> = (what: T) => void;

export class ReplicaReads<T> {
  private readonly progress: ReplicaProgress;
  private readonly forget: Forget<T>;
  private readonly onError: (err: unknown) => void;
  /** Accounts whose own events the fold counted and the replica may not have replayed yet: how many such folds wait. */
  private readonly fresh = new Map<string, number>();
  private pending = 0;

  constructor(progress: ReplicaProgress, forget: Forget<T>, onError: (err: unknown) => void) {
    this.progress = progress;
    this.forget = forget;
    this.onError = onError;
  }

  /** Whether an account's lookups must read the primary: the replica may lack its own counted events. */
  readsPrimary(accountId: string): boolean {
    return this.fresh.has(accountId);
  }

  /**
   * The fold counted these accounts' acknowledged events (on the primary): their lookups read
   * the primary until the replica has replayed it. Marked at once, before any lookup waiting on
   * the fold goes on.
   */
  counted(accountIds: Iterable<string>): void {
    const accounts = [...accountIds];
    if (accounts.length === 0) return;
    for (const id of accounts) this.fresh.set(id, (this.fresh.get(id) ?? 0) + 1);
    this.whenReplayed(() => {
      for (const id of accounts) {
        const left = (this.fresh.get(id) ?? 1) - 1;
        if (left <= 0) this.fresh.delete(id);
        else this.fresh.set(id, left);
      }
    });
  }

  /** The fold changed `what`: forget it again once the replica has replayed the change. */
  changed(what: T): void {
    this.whenReplayed(() => this.forget(what));
  }

  /** Folds whose forgetting (or whose accounts' reads of the primary) still wait for the replica. */
  get waiting(): number {
    return this.pending;
  }

  /** Stops waiting on the replica (the process stops). */
  close(): void {
    this.progress.close();
  }

  private whenReplayed(then: () => void): void {
    this.pending += 1;
    this.progress
      .primaryPosition()
      .then((position) => this.progress.replayed(position))
      .then(then, (err: unknown) => {
        // The primary could not be asked: act now rather than never, and say so.
        then();
        this.onError(err);
      })
      .finally(() => (this.pending -= 1));
  }
}

/**
 * Folds while a long load stores: `kick()` after each commit starts a fold of every event stored
 * so far unless one runs, and then one more once it ends, so at most one runs and none is
 * missed; `done()` waits until none runs. Where another instance holds the fold's turn, a kick
 * leaves the events to it rather than waiting for the turn (the load's own settle, at its end,
 * waits). For an import on PostgreSQL (event-import.ts, `foldAlong`), where the fold's
 * statements run on a connection and a server process of their own: a fold step and the next
 * batch's ingest proceed side by side instead of one after the other (docs/performance.md,
 * "Import"). On a SQLite file both are the writer thread's, one at a time, so it would buy
 * nothing there.
 */
export class FoldAlong {
  private readonly fold: () => Promise<void>;
  private running: Promise<void> | undefined;
  private again = false;

  constructor(fold: () => Promise<void>) {
    this.fold = fold;
  }

  kick(): void {
    if (this.running) {
      this.again = true;
      return;
    }
    // A fold that fails is tried again by the next kick, and by the settle that ends the load.
    this.running = this.fold()
      .catch(() => undefined)
      .finally(() => {
        this.running = undefined;
        if (this.again) {
          this.again = false;
          this.kick();
        }
      });
  }

  async done(): Promise<void> {
    while (this.running) await this.running;
  }
}

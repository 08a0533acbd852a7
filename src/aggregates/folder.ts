import type { Logger } from 'pino';
import { addressLookupKey, numberLookupKey, type OwnWritesBarrier } from '../domain/events/own-writes.ts';
import type { FoldedKeys, FoldPosition, FoldResult } from '../store/fold/aggregate-fold.ts';

/** Runs one fold step of at most `chunk` events where this process's store writes (on its writer thread for a SQLite file). */
export type FoldStepRunner = (chunk: number) => Promise<FoldResult>;

/**
 * The keys of the events another process folded in, between two positions (keysFoldedBetween);
 * undefined when there are too many to read.
 */
export type FoldedElsewhere = (after: number, upTo: number) => Promise<FoldedKeys | undefined>;

/** What listeners hear: these keys changed, or anything may have (a rebuild, too many to name). */
export type AggregateChangeNotice = FoldedKeys | 'everything';

/**
 * Events folded per step, unless behind. A step holds SQLite's one write lock, and on the writer
 * thread intake waits behind it: measured on SQLite here, 2,000 of the benchmark's events (over
 * 200,000 numbers) fold in 80–110 ms, 10,000 in 370 ms. A backlog folds in larger steps
 * (SETTLE_CHUNK).
 */
export const FOLD_CHUNK = 2000;

/** Most events whose keys are read to learn what another process folded; beyond, caches forget all. */
export const FOLDED_ELSEWHERE_READ = 20_000;

export interface FolderSettings {
  /** How often a server looks for events that others stored (other instances, the CLI). */
  intervalMs: number;
  /** How soon after this process stored events it folds them in, gathering what comes meanwhile. */
  delayMs: number;
}

/**
 * A fold writes each aggregate page it changes once, however many events changed it: folding
 * 200 ms of intake at a time rather than every commit writes the hot pages (busy numbers and
 * addresses) once per fold instead of once per group commit. Lookups by the submitting account
 * do not wait for it (they ask for a fold at once), and others see events well within 1 s.
 */
export const DEFAULT_FOLDER_SETTINGS: FolderSettings = { intervalMs: 250, delayMs: 200 };

/**
 * Events waiting to be folded beyond which intake waits for the fold (backpressure): a fold
 * falls behind only when intake outruns it for long, and then lookups would count events ever
 * later. Holding intake here keeps them within about a second of a 201 instead, at the fold's
 * pace (measured: 8,000–20,000 events/s per step size on the machine of docs/performance.md).
 */
export const INTAKE_HOLD_BACKLOG = 10_000;

/**
 * Age of the oldest event stored and not yet folded in beyond which intake waits for the fold:
 * the bound of docs/api.md §7 (every lookup counts an event within 1 s of its 201) in time, as
 * a count of events cannot keep it at every intake rate (an independent verification measured
 * 1.4–2.6 s at 5,000 events/s with only the count). The rest of the second is the fold step
 * that takes the event, another instance's turn to hear of it (FolderSettings.intervalMs) and
 * its lookup. Measured with two instances taking batches flat out
 * (test/faults/freshness-under-load.test.ts, quiet machine): at 300 ms the slowest lookup took
 * 947 ms, at 150 ms 522–788, at 100 ms 456–470, with no less intake (about 15,000 events/s; the
 * bound's cost is within this machine's noise).
 */
export const INTAKE_HOLD_LAG_MS = 100;

const NUMBER_PREFIX = numberLookupKey('');
const ADDRESS_PREFIX = addressLookupKey('');

/** How long a lookup waits for its own account's events before answering with what is folded. */
const OWN_WRITES_WAIT_MS = 1000;
/**
 * Events per step when settling a backlog (after an import): nothing waits behind such a step
 * but the next one, and a larger step writes each busy page once for more events.
 */
const SETTLE_CHUNK = 20_000;
/** How soon a fold is tried again while lookups wait and another instance held the turn. */
const RETRY_MS = 10;

interface Waiter {
  commit: number;
  resolve(): void;
}

/**
 * Keeps the lookup aggregates folding in the events behind intake (src/store/fold/aggregate-fold.ts):
 * soon after this process stores events, and every `intervalMs` for events stored elsewhere.
 * One fold at a time per process; a step that fails (store away) is tried again at the next turn,
 * from the position the store kept.
 *
 * It also gives an account's lookups its own acknowledged events (read-your-writes on this
 * instance): commits are numbered as they are acknowledged, and a lookup by an account with a
 * commit not yet folded in waits for the fold that covers it, never more than OWN_WRITES_WAIT_MS.
 */
export class AggregateFolder implements OwnWritesBarrier {
  private readonly step: FoldStepRunner;
  private readonly settings: FolderSettings;
  private readonly log: Logger | undefined;
  private readonly foldedElsewhere: FoldedElsewhere | undefined;
  private readonly listeners: Array<(changes: AggregateChangeNotice) => void> = [];
  private readonly countedListeners: Array<(accountIds: string[]) => void> = [];
  /**
   * How far listeners have heard of the fold, whichever process folded: the position and
   * rebuild count of the last step. Undefined before the first step, which tells them to forget
   * everything (what they kept may predate folds this process never saw).
   */
  private told: { through: number; rebuilds: number } | undefined;
  /** Commits this process acknowledged, numbered from 1. */
  private acknowledged = 0;
  /** Every event of commits up to this number is folded in. */
  private covered = 0;
  /**
   * Per account with a commit not yet covered: its latest such commit, and per lookup key
   * (a number or an address its events named) the latest commit that named it.
   */
  private readonly pending = new Map<string, { latest: number; keys: Map<string, number> }>();
  private waiters: Waiter[] = [];
  /**
   * Events waiting to be folded, as far as this process knows: what the last step left, plus
   * what this process committed since that step began. What intake is held against.
   */
  private behind = 0;
  /** Events this process committed, ever: to tell what came during a step. */
  private committedEvents = 0;
  /** When the oldest event the last step left unfolded was received (ms), in any process. */
  private waitingSince: number | undefined;
  /** When this process first committed since the last step began (ms): events that step did not see. */
  private committedSinceStep: number | undefined;
  private readonly clock: () => number;
  /** Intake held back while the fold catches up, woken after each step. */
  private held: Array<() => void> = [];
  private running: Promise<boolean> | undefined;
  private keptRows = 0;
  private interval: NodeJS.Timeout | undefined;
  private soon: NodeJS.Timeout | undefined;
  private stopped = false;

  /**
   * With `foldedElsewhere`, listeners also hear of what other processes folded and rebuilt
   * (other instances, workers, the CLI), at each step, as the position moves past this
   * process's own folds: caches of lookups need no lifetime to catch those changes.
   */
  constructor(step: FoldStepRunner, settings: FolderSettings = DEFAULT_FOLDER_SETTINGS, log?: Logger, foldedElsewhere?: FoldedElsewhere, clock: () => number = Date.now) {
    this.clock = clock;
    this.step = step;
    this.settings = settings;
    this.log = log;
    this.foldedElsewhere = foldedElsewhere;
  }

  /** Events stored but not yet folded in, as this process knows (a gauge for operators). */
  get backlog(): number {
    return this.behind;
  }

  /** Aggregate rows the fold keeps in memory, as its last step here left them. */
  get rowsKept(): number {
    return this.keptRows;
  }

  /** How long the oldest event stored and not yet folded in has waited, as this process knows (ms; 0 when none). */
  get lagMs(): number {
    const oldest = Math.min(this.waitingSince ?? Infinity, this.committedSinceStep ?? Infinity);
    return oldest === Infinity ? 0 : Math.max(0, this.clock() - oldest);
  }

  /** Starts the periodic turns (the server does; the CLI folds with `settle`). */
  start(): void {
    this.stopped = false;
    this.interval ??= setInterval(() => this.kick(), this.settings.intervalMs).unref();
  }

  /** Stops the turns; events not yet folded in are folded by the next process on the store. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.behind = 0;
    this.waitingSince = this.committedSinceStep = undefined;
    clearInterval(this.interval);
    clearTimeout(this.soon);
    this.interval = this.soon = undefined;
    await this.running;
    this.release();
  }

  /** Called with the keys every fold step changed, here or elsewhere (caches of lookups drop them). */
  onChanges(listener: (changes: AggregateChangeNotice) => void): void {
    this.listeners.push(listener);
  }

  /**
   * Called with the accounts some of whose acknowledged events the fold has just counted, before
   * the lookups waiting on them go on (a read replica's guard, domain/lookups/replica-reads.ts).
   */
  onCounted(listener: (accountIds: string[]) => void): void {
    this.countedListeners.push(listener);
  }

  /** This process acknowledged a commit of `events` events, naming these lookup keys per account. */
  committed(keysByAccount: ReadonlyMap<string, Iterable<string>>, events = 1): void {
    this.acknowledged += 1;
    this.committedEvents += events;
    this.behind += events;
    this.committedSinceStep ??= this.clock();
    for (const [accountId, keys] of keysByAccount) {
      let pending = this.pending.get(accountId);
      if (!pending) this.pending.set(accountId, (pending = { latest: 0, keys: new Map() }));
      pending.latest = this.acknowledged;
      for (const key of keys) pending.keys.set(key, this.acknowledged);
    }
    if (this.soon || this.stopped) return;
    this.soon = setTimeout(() => {
      this.soon = undefined;
      this.kick();
    }, this.settings.delayMs);
  }

  ownWritesVisible(accountId: string, key?: string): Promise<void> | undefined {
    const pending = this.pending.get(accountId);
    // A lookup waits only for the account's events about what it asks: an account that submits
    // all the time still looks up other numbers without waiting for a fold.
    const commit = key === undefined ? pending?.latest : pending?.keys.get(key);
    if (commit === undefined || commit <= this.covered || this.stopped) return undefined;
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, OWN_WRITES_WAIT_MS);
      this.waiters.push({
        commit,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      });
      this.kick();
    });
  }

  /**
   * Resolves once intake may commit: at once unless the oldest event waiting for the fold has
   * waited more than INTAKE_HOLD_LAG_MS, or more than INTAKE_HOLD_BACKLOG events wait, then
   * after the steps that bring it back under both.
   */
  roomForIntake(): Promise<void> | undefined {
    if (this.stopped || (this.behind <= INTAKE_HOLD_BACKLOG && this.lagMs <= INTAKE_HOLD_LAG_MS)) return undefined;
    return new Promise<void>((resolve) => {
      this.held.push(resolve);
      this.kick();
    }).then(() => this.roomForIntake());
  }

  /**
   * Folds in every event stored so far, here or elsewhere: after an import, before a test reads.
   * In steps of `chunk` events: a bulk import, with no server waiting on the store, folds in
   * larger ones, which read and write each busy aggregate row once for more events.
   */
  async settle(chunk = SETTLE_CHUNK): Promise<void> {
    while (!(await this.stepsInTurn(chunk))) await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
  }

  /**
   * Folds in what is stored so far, in steps of `chunk`, once: where another instance holds the
   * turn it is folding them, and this returns rather than trying again until it gets the turn,
   * as settle does. For folding beside a load (import/fold-along.ts), which calls again after each batch.
   */
  async foldOnce(chunk = SETTLE_CHUNK): Promise<void> {
    await this.stepsInTurn(chunk);
  }

  /** Steps in `chunk`s after any run under way; whether they folded everything there was. */
  private async stepsInTurn(chunk: number): Promise<boolean> {
    await this.running;
    const run = this.runSteps(chunk, chunk);
    this.running = run;
    return run.finally(() => {
      if (this.running === run) this.running = undefined;
    });
  }

  private kick(): void {
    if (this.running || this.stopped) return;
    const run = this.runSteps(FOLD_CHUNK);
    this.running = run;
    void run.then(() => {
      this.running = undefined;
      // Lookups or intake still wait: another instance held the turn, commits came in
      // meanwhile, or the fold is still behind.
      if ((this.waiters.length > 0 || this.held.length > 0) && !this.stopped) setTimeout(() => this.kick(), RETRY_MS).unref();
    });
  }

  /** Steps until nothing is left; whether it got there (not when another instance had the turn or the store failed). */
  private async runSteps(firstChunk: number, largestChunk = SETTLE_CHUNK): Promise<boolean> {
    const upTo = this.acknowledged;
    let chunk = firstChunk;
    for (;;) {
      let result: FoldResult;
      const committedBefore = this.committedEvents;
      // What this process commits from now on, the step may not see: its age is kept apart.
      this.committedSinceStep = undefined;
      try {
        result = await this.step(chunk);
      } catch (err) {
        this.log?.warn({ err }, 'folding events into the lookup aggregates failed; trying again at the next turn');
        // Lookups answer with what is folded, and intake goes on, rather than wait on a store that fails.
        this.behind = 0;
        this.waitingSince = this.committedSinceStep = undefined;
        this.release();
        return false;
      }
      this.behind = result.behind + (this.committedEvents - committedBefore);
      if (result.rowsKept !== undefined) this.keptRows = result.rowsKept;
      // The store's word on what waits, whichever process stored it; before a step that read
      // nothing (idle), what this process committed while it ran.
      this.waitingSince = result.waitingSince !== undefined ? Date.parse(result.waitingSince) : undefined;
      await this.hearFoldsElsewhere(result.position);
      const held = this.held;
      this.held = [];
      for (const wake of held) wake();
      // Another instance folds meanwhile: this one tries again soon (lookups wait on it).
      if (result.skipped) return false;
      if (result.changes.numbers.length > 0 || result.changes.addresses.length > 0) {
        for (const listener of this.listeners) listener(result.changes);
      }
      if (!result.more) break;
      // Behind intake: larger steps, whose fixed costs (statements, round trips, a commit) and
      // busy rows are shared by more events, until the fold catches up.
      chunk = Math.min(chunk * 2, largestChunk);
    }
    this.covered = Math.max(this.covered, upTo);
    // Another instance may have folded this process's events in (it held the turn): lookups here
    // were not told by a step of their own, so the keys those events named are dropped now. Not
    // with `foldedElsewhere`: every such event was told by hearFoldsElsewhere already, and the
    // rest by this process's own steps, with the rows that keep lookups' answers current, which
    // a second telling, with keys only, would drop.
    const covered: FoldedKeys = { numbers: [], addresses: [] };
    const counted = new Set<string>();
    for (const [accountId, pending] of this.pending) {
      for (const [key, commit] of pending.keys) {
        if (commit > this.covered) continue;
        pending.keys.delete(key);
        counted.add(accountId);
        if (key.startsWith(NUMBER_PREFIX)) covered.numbers.push(key.slice(NUMBER_PREFIX.length));
        else if (key.startsWith(ADDRESS_PREFIX)) covered.addresses.push(key.slice(ADDRESS_PREFIX.length));
        // A range's key (rangeLookupKey) goes with its number's, whose changes name the range.
      }
      if (pending.latest <= this.covered) {
        this.pending.delete(accountId);
        counted.add(accountId);
      }
    }
    if (counted.size > 0) for (const listener of this.countedListeners) listener([...counted]);
    if (!this.foldedElsewhere && (covered.numbers.length > 0 || covered.addresses.length > 0)) for (const listener of this.listeners) listener(covered);
    this.waiters = this.waiters.filter((w) => {
      if (w.commit > this.covered) return true;
      w.resolve();
      return false;
    });
    return true;
  }

  /**
   * Tells listeners what moved the fold's position before this step began, which this process
   * did not fold itself: the keys of those events, or everything after a rebuild (or when the
   * events are too many to read, or cannot be read).
   */
  private async hearFoldsElsewhere(position: FoldPosition | undefined): Promise<void> {
    if (!this.foldedElsewhere || !position) return;
    const told = this.told;
    this.told = { through: Math.max(position.through, told?.through ?? 0), rebuilds: position.rebuilds };
    if (told && told.rebuilds === position.rebuilds && position.from <= told.through) return;
    let changes: AggregateChangeNotice = 'everything';
    if (told && told.rebuilds === position.rebuilds) {
      try {
        changes = (await this.foldedElsewhere(told.through, position.from)) ?? 'everything';
      } catch (err) {
        this.log?.warn({ err }, 'reading what another process folded failed; lookups forget every kept aggregate');
      }
    }
    for (const listener of this.listeners) listener(changes);
  }

  private release(): void {
    for (const waiter of this.waiters) waiter.resolve();
    this.waiters = [];
    for (const wake of this.held) wake();
    this.held = [];
  }
}

import { randomUUID } from 'node:crypto';
import { NO_ALLOWLISTS, OPERATOR_LIST, type AllowlistMatcher, type AllowlistReader } from '../allowlists/allowlists.ts';
import { oldestThatCanReach } from './feed-service.ts';
import type { IndicatorKind, StixIndicator } from './stix-indicators.ts';
import { inCollection, nextVersion, type Candidate, type NewVersion, type PublicationSettings } from './taxii-versions.ts';
import { NO_REPORTS, type AcceptedSet, type ReportedValues } from './value-reports.ts';
import type { PassableValue, PeerSighting, PeerValueKind } from '../federation/peer-evidence.ts';

/**
 * The TAXII collections' publisher (docs/taxii.md, "Versions"), the job that applies the rules of
 * taxii-versions.ts over the store, a page at a time, once across instances by a lease: it turns what the fold keeps of
 * the shared data set into versions of STIX indicators, each added once with its own date_added,
 * so that a platform polling with `added_after` gets every change once. A version is published
 * when an indicator's content changes: the fold changed its aggregate, or decay moved its score
 * at the turn of an hour. When the score falls below the collection's threshold, or the value
 * leaves the shared data set, the object is revoked (a new version with `revoked: true`) rather
 * than dropped, so platforms stop acting on it; a value that scores again later is a new object.
 */

/** Where a collection's publisher stands (migration 019). */
export interface PublicationState {
  /**
   * The fold's position and rebuild count as the last complete pass began: a pass runs only when
   * they moved (or an hour turned), so an idle server reads two rows and writes nothing.
   */
  foldSeen: string | undefined;
  /** The latest `changed_at` of the fold's rows it has read; undefined before its first pass. */
  changedThrough: string | undefined;
  /** The last hour (ISO) at whose turn it re-scored every live object. */
  sweptHour: string | undefined;
  /** A first pass stopped part-way: where it resumes (migration 023). */
  firstPass?: FirstPassPosition;
  /** Where it stands in what peers said (migration 034); undefined before its first pass over it. */
  peers?: PeerPosition;
}

/**
 * How far the numbers' or addresses' collection has taken in what peers said (docs/federation.md,
 * "Scores and publication"): the rows written through `seq`, the peers' settings as `signature`
 * gives them, and the ends (`valid_until`) of their indicators through `checked`.
 */
export interface PeerPosition {
  seq: number;
  signature: string;
  checked: string;
}

/**
 * What the publisher reads of the peers' say, as every serving process keeps it in memory
 * (src/domain/federation/peer-evidence.ts).
 */
export interface PublishedPeers {
  refresh(): Promise<void>;
  /** The `seq` of the latest row held. */
  readonly through: number;
  /** The peers' names, trust and settings as held. */
  readonly peersSignature: string;
  passableOf(kind: PeerValueKind, value: string, now?: number): readonly PeerSighting[] | undefined;
  passableValues(kind: PeerValueKind, now?: number): PassableValue[];
  /** Values with an indicator held whose `valid_until` falls in (from, to], in ms. */
  endingBetween(kind: PeerValueKind, from: number, to: number): string[];
}

/**
 * Where a first pass stands between its pages. A first pass over millions of shared rows runs
 * for tens of minutes, longer than a process may live between deploys: each page stores this,
 * and the next pass, here or on another instance, takes up from it instead of from the start.
 */
export interface FirstPassPosition {
  /** The page to read next. */
  next: string;
  /** The latest change when the pass began: the passes after it read changes from there. */
  through: string;
  /** The hour (ISO) it began scoring at: if it ends in a later one, every live object is swept again. */
  hour: string;
}

/** What a publishing transaction moves: undefined leaves a field as it is; a null firstPass ends one. */
export type StateChange = Partial<Omit<PublicationState, 'firstPass'>> & { firstPass?: FirstPassPosition | null };

/** Values read a page at a time, each with what the fold keeps of it and its object. */
export interface CandidatePage {
  candidates: Candidate[];
  /** Where the next page starts; undefined after the last. */
  next: string | undefined;
  /** The latest change read (the incremental pass), whether its row came or was passed over. */
  changedThrough?: string;
}

/** What the publisher asks of the store. */
export interface TaxiiPublicationStore {
  /** The collection's state, read without claiming anything; undefined before its first pass. */
  stateOf(kind: IndicatorKind): Promise<PublicationState | undefined>;
  /**
   * Takes (or keeps) the collection's lease for `holder` until `until`, and reads its state;
   * undefined while another holds it. A store that several processes share publishes through
   * one of them at a time.
   */
  claim(kind: IndicatorKind, holder: string, now: string, until: string): Promise<PublicationState | undefined>;
  /** Gives up `holder`'s lease on the collection, if it still holds it: another process may claim it at once. */
  release(kind: IndicatorKind, holder: string): Promise<void>;
  /** The fold's position and rebuild count, as one text: it moves whenever any aggregate may have changed. */
  foldSignature(): Promise<string>;
  /** The latest `changed_at` of the shared data set's rows (where a first pass starts reading changes from). */
  latestChange(kind: IndicatorKind): Promise<string | undefined>;
  /**
   * Shared rows the fold changed after `since`, oldest change first, each at its latest change.
   * A page may hold fewer rows than `limit` and still have a `next` (changes of rows changed
   * again since are passed over). Moving `changedThrough` by publish() lets the store forget
   * changes before changesReadFrom(changedThrough).
   */
  changedAfter(kind: IndicatorKind, since: string, page: string | undefined, limit: number): Promise<CandidatePage>;
  /** Shared rows last seen at or after `since` (the first pass over a store published before). */
  seenSince(kind: IndicatorKind, since: string, page: string | undefined, limit: number): Promise<CandidatePage>;
  /** Objects not revoked, by value (the hourly re-scoring). */
  liveObjects(kind: IndicatorKind, page: string | undefined, limit: number): Promise<CandidatePage>;
  /** The bodies last published of these objects (to revoke them). */
  latestBodies(kind: IndicatorKind, objectIds: string[]): Promise<Map<string, StixIndicator>>;
  /**
   * Adds the versions in one transaction, if `holder` still holds the lease (false otherwise,
   * and nothing is written), each with a date_added later than every one before it, and moves
   * the state.
   */
  publish(kind: IndicatorKind, holder: string, versions: NewVersion[], state: StateChange, leaseUntil: string): Promise<boolean>;
  /** Values of a kind named by peers' rows written after `after` through `through`, in `seq` order, at most `limit` rows. */
  peerValuesAfter(kind: PeerValueKind, after: number, through: number, limit: number): Promise<Array<{ value: string; seq: number }>>;
  /** These numbers or addresses, each with what the shared data set keeps of it, if anything, and its object, if any. */
  candidatesOf(kind: IndicatorKind, values: string[]): Promise<Candidate[]>;
  /** Drops versions superseded, and revocations made, before `cutoff` (ISO): the retention. */
  prune(kind: IndicatorKind, cutoff: string): Promise<number>;
}

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;
const EPOCH = '1970-01-01T00:00:00.000Z';
/** Values per page and per publishing transaction: short enough not to hold SQLite's writer long. */
const PAGE = 500;
/**
 * Changes a turn reads to learn whether any shared row changed. A few, not one: changes of rows
 * changed again since are skipped, and a page of them alone holds no row but tells there is more.
 */
const PEEK = 10;
/** How long a lease lasts without being renewed: a publisher that died is replaced after this. */
const LEASE_MS = 60_000;
/**
 * How far back each incremental pass reads the fold's changes again: a fold on another instance
 * whose clock is up to this much behind still falls inside. Harmless to read twice: a version is
 * published only when the content differs.
 */
const CLOCK_MARGIN_MS = 2000;

/**
 * Where an incremental pass reads changes from, after a pass that read through `changedThrough`:
 * a little before it. A store may forget changes before this instant once the collection's state
 * has moved to `changedThrough`: no pass reads them again.
 */
export function changesReadFrom(changedThrough: string): string {
  return new Date(Date.parse(changedThrough) - CLOCK_MARGIN_MS).toISOString();
}

export interface PublisherOptions extends Omit<PublicationSettings, 'accepted'> {
  /** The operator's accepted false-positive reports, read at each turn. */
  reports?: ReportedValues;
  /** How long superseded versions and revocations are served (TOLLWATCH_TAXII_RETENTION_DAYS). */
  retentionDays: number;
  now?: () => Date;
  /** How a pass measures its pages and rests between them (tests); a monotonic clock in ms and a timer by default. */
  pacing?: Pacing;
  /** The operator's allowlist (docs/api.md §16): a value on it is in no collection. */
  allowlists?: AllowlistReader;
  /** What peers said, passed on where the operator lets it be (docs/federation.md); nothing when absent. */
  peers?: PublishedPeers;
}

export interface Pacing {
  clock(): number;
  rest(ms: number): Promise<void>;
}

const PACING: Pacing = {
  clock: () => performance.now(),
  rest: (ms) => new Promise((resolve) => (ms > 0 ? setTimeout(resolve, ms) : setImmediate(resolve))),
};

/** What one publication pass did, for logs and tests. */
export interface PublicationReport {
  versions: number;
  revoked: number;
  /** False when another process held the lease. */
  ran: boolean;
}

export const TAXII_KINDS: IndicatorKind[] = ['ip-addresses', 'phone-numbers', 'number-ranges'];

/** The collections that pass on what peers said, and the kind of peer indicator each takes. */
const PEER_KINDS: Partial<Record<IndicatorKind, PeerValueKind>> = { 'phone-numbers': 'number', 'ip-addresses': 'ip' };

export class TaxiiPublisher {
  private readonly store: TaxiiPublicationStore;
  private readonly options: PublisherOptions;
  private readonly now: () => Date;
  /** Names this process in the lease. */
  private readonly holder = randomUUID();
  private running: Promise<PublicationReport> | undefined;
  /** Per collection, the fold signature at which it last found no shared row changed. */
  private readonly quiet = new Map<IndicatorKind, string>();
  private timer: NodeJS.Timeout | undefined;
  private stopped = true;
  /** Set by stop(): a pass under way ends after the page it is publishing. */
  private closing = false;
  /** The collections whose lease this process has claimed: given up by stop(). */
  private readonly claimed = new Set<IndicatorKind>();
  /**
   * Per collection, the accepted reports' fingerprint its live objects were last scored with here:
   * when a decision changes the set, every live object is scored again (as at the turn of an hour).
   */
  private readonly sweptReports = new Map<IndicatorKind, string>();
  private accepted: AcceptedSet | undefined;
  private readonly allowlists: AllowlistReader;
  /** Per collection, the operator's allowlist as this process's last complete pass applied it. */
  private readonly applied = new Map<IndicatorKind, AllowlistMatcher>();

  constructor(store: TaxiiPublicationStore, options: PublisherOptions) {
    this.store = store;
    this.options = options;
    this.now = options.now ?? (() => new Date());
    this.allowlists = options.allowlists ?? NO_ALLOWLISTS;
  }

  /**
   * Publishes every `intervalMs` from now on, until stop(). A pass that fails (the store down)
   * is reported and tried again at the next turn: the state it had not moved is read again.
   */
  start(intervalMs: number, onError: (err: unknown) => void): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.closing = false;
    const turn = () => {
      this.timer = setTimeout(() => {
        this.publish()
          .catch(onError)
          .finally(() => {
            if (!this.stopped) turn();
          });
      }, intervalMs);
      this.timer.unref();
    };
    turn();
  }

  /**
   * Stops the turns, and a pass under way after the page it is publishing: a first pass over
   * millions of shared rows takes minutes, and a process told to stop had to wait for it all
   * (docs/performance.md, "A store of 10 million events"). Every page is published whole with
   * the position past it, so the next pass, here or on another instance, loses nothing and
   * repeats nothing: it reads on from where the last page left off, a first pass included.
   * The leases are given up, so that the process replacing this one in a deploy publishes at
   * its first turn rather than once they run out (a minute without TAXII versions).
   */
  async stop(): Promise<void> {
    this.stopped = true;
    this.closing = true;
    clearTimeout(this.timer);
    await this.running?.catch(() => undefined);
    const held = [...this.claimed];
    this.claimed.clear();
    // A store that fails here leaves the leases to run out, as a process that died would.
    await Promise.all(held.map((kind) => this.store.release(kind, this.holder).catch(() => undefined)));
  }

  /** One pass over every collection; a pass already under way is joined, not doubled. */
  publish(): Promise<PublicationReport> {
    this.running ??= this.passOverAll().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  private async passOverAll(): Promise<PublicationReport> {
    const total: PublicationReport = { versions: 0, revoked: 0, ran: false };
    // Every row the peers' polls wrote so far, on any instance, is taken in at this turn.
    await this.options.peers?.refresh();
    for (const kind of TAXII_KINDS) {
      if (this.closing) break;
      const report = await this.pass(kind);
      total.versions += report.versions;
      total.revoked += report.revoked;
      total.ran ||= report.ran;
    }
    return total;
  }

  private async pass(kind: IndicatorKind): Promise<PublicationReport> {
    const report: PublicationReport = { versions: 0, revoked: 0, ran: false };
    const now = this.now();
    const hour = new Date(Math.floor(now.getTime() / HOUR_MS) * HOUR_MS);
    const hourIso = hour.toISOString();
    // Cheap reads first: an idle server writes nothing, not even its lease.
    const [signature, seen, list] = await Promise.all([this.store.foldSignature(), this.store.stateOf(kind), this.allowlists.kept(OPERATOR_LIST) ?? this.allowlists.load(OPERATOR_LIST)]);
    const reports = this.options.reports ?? NO_REPORTS;
    const accepted = (this.accepted = reports.current() ?? (await reports.load()));
    // First seen empty, nothing can have been held down yet: no sweep for it.
    if (!this.sweptReports.has(kind) && accepted.byKey.size === 0) this.sweptReports.set(kind, accepted.fingerprint);
    const reportsMoved = this.sweptReports.get(kind) !== accepted.fingerprint;
    // The operator's allowlist changed since this process last applied it (or it has entries and
    // this process never applied it): every live object is looked at again at once, so an
    // allowlisted value is revoked within a turn; and when entries were removed, every shared
    // row that can reach the threshold too, so a value no longer allowlisted is published again.
    const before = this.applied.get(kind);
    const listChanged = before ? before.fingerprint !== list.fingerprint : list.size > 0;
    const listShrank = before !== undefined && [...before.ids].some((id) => !list.ids.has(id));
    const swept = seen?.sweptHour === hourIso && !reportsMoved;
    const peerWork = this.peerWork(kind, seen?.peers, now);
    if (seen?.changedThrough !== undefined && swept && !listChanged && !peerWork && (seen.foldSeen === signature || this.quiet.get(kind) === signature)) return report;
    // The fold moved, but maybe only in accounts' own scopes, which no collection serves: with no
    // shared row changed, nothing is written (on SQLite a write here waits for intake's writer,
    // holding this thread meanwhile). The position is kept in memory only; another process
    // finds the same nothing.
    if (seen?.changedThrough !== undefined && swept && !listChanged && !peerWork) {
      const since = changesReadFrom(seen.changedThrough);
      const peek = await this.store.changedAfter(kind, since, undefined, PEEK);
      if (peek.candidates.length === 0 && peek.next === undefined) {
        this.quiet.set(kind, signature);
        return report;
      }
    }
    const state = await this.store.claim(kind, this.holder, now.toISOString(), this.leaseEnd());
    if (!state) return report;
    this.claimed.add(kind);
    report.ran = true;
    const unchanged = state.changedThrough !== undefined && state.foldSeen === signature;

    const pacing = this.options.pacing ?? PACING;
    const publishPages: PagesPublisher = async (read, done, along = (got) => (got.changedThrough ? { changedThrough: got.changedThrough } : {}), from = undefined) => {
      let page = from;
      do {
        const began = pacing.clock();
        const got = await read(page);
        const versions = await this.versionsOf(kind, got.candidates, hour, now, list);
        const moved = got.next === undefined ? done(got) : along({ ...got, next: got.next });
        if (!(await this.store.publish(kind, this.holder, versions, moved, this.leaseEnd()))) throw new LeaseLost();
        report.versions += versions.length;
        report.revoked += versions.filter((v) => v.object.revoked).length;
        page = got.next;
        // A store that answers synchronously (SQLite on this thread) resolves a whole pass without
        // a turn of the event loop: requests would wait for all of it (3.9 s for a first pass
        // over 100,000 numbers, docs/performance.md). Between pages they wait for one page only.
        // And the pass rests as long as its page took: a first pass over millions of rows runs
        // for minutes, and with a turn alone it took most of the thread that answers lookups
        // (docs/performance.md, "A store of 10 million events"); so it takes half at most.
        await pacing.rest(pacing.clock() - began);
        if (this.closing) throw new PassStopped();
      } while (page !== undefined);
    };

    let sweptHour = state.sweptHour;
    try {
      if (state.changedThrough === undefined) {
        // The first pass: every shared row that can reach the threshold, through the feeds' index,
        // scored at this hour (so no sweep of this hour follows). Changes from the latest one
        // before it on are read again by the next pass. One stopped part-way takes up at the page
        // it had reached, with the latest change and the hour of its start: rows it had read and
        // the fold changed since are read again by the next pass, and pages scored in an earlier
        // hour by the sweep that follows it.
        const resumed = state.firstPass;
        const through = resumed?.through ?? (await this.store.latestChange(kind)) ?? EPOCH;
        const began = resumed?.hour ?? hourIso;
        const since = oldestThatCanReach(this.options.minScore, hour, this.options.scoring);
        await publishPages(
          (page) => this.store.seenSince(kind, since, page, PAGE),
          () => ({ foldSeen: signature, changedThrough: through, sweptHour: began, firstPass: null }),
          (got) => ({ firstPass: { next: got.next, through, hour: began } }),
          resumed?.next,
        );
        sweptHour = began;
      } else if (!unchanged) {
        // The rows the fold changed since the last pass, by the instant it stamped on them; read
        // from a little before, in case another instance's clock is behind.
        const since = changesReadFrom(state.changedThrough);
        let through = state.changedThrough;
        await publishPages(
          async (page) => {
            const got = await this.store.changedAfter(kind, since, page, PAGE);
            if (got.changedThrough && got.changedThrough > through) through = got.changedThrough;
            return { ...got, changedThrough: through };
          },
          () => ({ foldSeen: signature, changedThrough: through }),
        );
      }
      if (listShrank && state.changedThrough !== undefined) {
        const since = oldestThatCanReach(this.options.minScore, hour, this.options.scoring);
        await publishPages((page) => this.store.seenSince(kind, since, page, PAGE), () => ({}));
      }
      if (peerWork || this.peerWork(kind, state.peers, now)) {
        // Another instance published from a later read of the peers' rows or settings than this
        // one holds: read them again, so that nothing older is published over what it did.
        const peers = this.options.peers!;
        if (state.peers && (state.peers.seq > peers.through || state.peers.signature !== peers.peersSignature)) await peers.refresh();
        if (this.peerWork(kind, state.peers, now)) await this.passOverPeers(kind, state.peers, now, publishPages);
      }
      if (sweptHour !== hourIso || reportsMoved || listChanged) {
        // Decay moves scores at the turn of each hour with no event at all, and the operator's
        // decisions on reports and its allowlist move them too: every live object is scored
        // again, and those whose score moved, or fell below the threshold, get a version.
        await publishPages((page) => this.store.liveObjects(kind, page, PAGE), () => ({ sweptHour: hourIso }));
        this.sweptReports.set(kind, accepted.fingerprint);
        await this.store.prune(kind, new Date(now.getTime() - this.options.retentionDays * DAY_MS).toISOString());
      }
      this.applied.set(kind, list);
    } catch (err) {
      if (err instanceof LeaseLost || err instanceof PassStopped) return report;
      throw err;
    }
    return report;
  }

  /**
   * Whether what peers said moved for a collection since `position`: rows written, the peers'
   * settings changed, or an indicator's `valid_until` passed.
   */
  private peerWork(kind: IndicatorKind, position: PeerPosition | undefined, now: Date): boolean {
    const peers = this.options.peers;
    const peerKind = PEER_KINDS[kind];
    if (!peers || !peerKind) return false;
    if (!position) return true;
    return position.seq < peers.through || position.signature !== peers.peersSignature || peers.endingBetween(peerKind, Date.parse(position.checked), now.getTime()).length > 0;
  }

  /**
   * Publishes the values whose peers' say moved since `position`: those the rows written since
   * name (a new say, a revocation, a TLP marking changed, a peer removed), those whose indicator
   * ended since, and, when the peers' settings changed (republish, trust, enabled), every live
   * object and every value now passable. The position moves with the last page, so a pass cut
   * short is done again whole by the next, which publishes only what differs.
   */
  private async passOverPeers(kind: IndicatorKind, position: PeerPosition | undefined, now: Date, publishPages: PagesPublisher): Promise<void> {
    const peers = this.options.peers!;
    const peerKind = PEER_KINDS[kind]!;
    const through = peers.through;
    const signature = peers.peersSignature;
    const values = new Set<string>();
    const settingsMoved = position !== undefined && position.signature !== signature;
    if (!position || settingsMoved) for (const { value } of peers.passableValues(peerKind, now.getTime())) values.add(value);
    if (position) {
      for (let after = position.seq; after < through; ) {
        const rows = await this.store.peerValuesAfter(peerKind, after, through, PAGE);
        for (const row of rows) values.add(row.value);
        after = rows.length < PAGE ? through : rows.at(-1)!.seq;
      }
      for (const value of peers.endingBetween(peerKind, Date.parse(position.checked), now.getTime())) values.add(value);
    }
    const moved: StateChange = { peers: { seq: through, signature, checked: now.toISOString() } };
    const sorted = [...values].sort();
    // The settings' change is stored only after the sweep of every live object below.
    const valuesDone = settingsMoved ? { peers: { ...moved.peers!, signature: position.signature } } : moved;
    await publishPages(
      async (page) => {
        const from = page === undefined ? 0 : Number(page);
        const next = from + PAGE < sorted.length ? String(from + PAGE) : undefined;
        return { candidates: await this.store.candidatesOf(kind, sorted.slice(from, from + PAGE)), next };
      },
      () => valuesDone,
      () => ({}),
    );
    if (settingsMoved) await publishPages((page) => this.store.liveObjects(kind, page, PAGE), () => moved);
  }

  private async versionsOf(kind: IndicatorKind, candidates: Candidate[], scoredAt: Date, now: Date, list: AllowlistMatcher): Promise<NewVersion[]> {
    const settings: PublicationSettings = { minScore: this.options.minScore, scoring: this.options.scoring, ...(this.accepted ? { accepted: this.accepted } : {}) };
    // What peers said, where it may be passed on, is added to each number's and address's score.
    const peerKind = PEER_KINDS[kind];
    const peers = this.options.peers;
    if (peers && peerKind) {
      candidates = candidates.map((c) => {
        const sightings = peers.passableOf(peerKind, c.value, now.getTime());
        return sightings ? { ...c, peers: sightings } : c;
      });
    }
    // An allowlisted value is as one the shared data set does not hold, and no peer reported: its
    // live object is revoked, and it gets no new one while it stays on the list.
    if (list.size > 0) {
      const listed = {
        'ip-addresses': (value: string) => list.address(value),
        'phone-numbers': (value: string) => list.number(value),
        // A block is kept out when an entry covers it or lies inside it, as in the feed (allowlists.ts).
        'number-ranges': (value: string) => list.numberRange(value),
      }[kind];
      candidates = candidates.map((c) => ((c.kept || c.peers) && listed(c.value) ? { ...c, kept: undefined, peers: undefined } : c));
    }
    // Bodies are read only for objects about to be revoked: those whose value no longer scores.
    const revoking = candidates.filter((c) => c.object && !c.object.revoked && !inCollection(kind, c, settings, scoredAt));
    const bodies = revoking.length > 0 ? await this.store.latestBodies(kind, revoking.map((c) => c.object!.objectId)) : new Map<string, StixIndicator>();
    const versions: NewVersion[] = [];
    for (const candidate of candidates) {
      const version = nextVersion(kind, candidate, settings, scoredAt, now, candidate.object && bodies.get(candidate.object.objectId));
      if (version) versions.push(version);
    }
    return versions;
  }

  private leaseEnd(): string {
    return new Date(this.now().getTime() + LEASE_MS).toISOString();
  }
}

/**
 * Publishes page after page of what `read` gives, from `from`, each in its transaction with the
 * state `along` gives for where the pass then stands, the last one with `done`'s.
 */
type PagesPublisher = (
  read: (page: string | undefined) => Promise<CandidatePage>,
  done: (last: CandidatePage) => StateChange,
  along?: (got: CandidatePage & { next: string }) => StateChange,
  from?: string,
) => Promise<void>;

class LeaseLost extends Error {}
class PassStopped extends Error {}

import { randomUUID } from 'node:crypto';
import { readPeerObject, type PeerIndicator } from './peer-objects.ts';
import type { ObjectCounts, PeerPosition, PeerRecords, PeerToPoll } from './peer-records.ts';
import { PeerRequestFailed, type TaxiiReader } from './taxii-reader.ts';

/** The poller's bounds (docs/federation.md, "How it is read"); tests shorten the times. */
export interface PollerSettings {
  /** How often an instance looks for a peer whose turn has come. */
  tickMs: number;
  /** The `limit` asked of each page; a page with more objects is refused whole. */
  pageLimit: number;
  /** Pages read in one poll, across the peer's collections: an endless `more: true` stops here. */
  maxPages: number;
  /** The first back-off after a failed poll; it doubles with each failure in a row, up to maxBackoffMs. */
  backoffMs: number;
  maxBackoffMs: number;
  /** A poller's lease on a peer, renewed with each page it writes. */
  leaseMs: number;
  /** Indicators kept of one peer at most (every server keeps them in memory): new ones past it are refused. */
  maxIndicatorsPerPeer: number;
}

export const POLLER_DEFAULTS: PollerSettings = {
  tickMs: 5000,
  pageLimit: 500,
  maxPages: 200,
  backoffMs: 60_000,
  maxBackoffMs: 6 * 3600_000,
  leaseMs: 120_000,
  maxIndicatorsPerPeer: 200_000,
};

/** What one poll came to: counts of what was read, and whether it ended well. */
export interface PollOutcome {
  peer: string;
  ok: boolean;
  pages: number;
  counts: ObjectCounts;
  /** Why it failed or stopped short; shown as the peer's `last_error`. */
  error?: string;
}

/** The longest `next` or date kept from a peer: both are sent back in a URL. */
const MAX_TOKEN = 1024;
const DATE_ADDED = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$/;

/** What a peer may answer a `next` it no longer knows. */
const STALE_NEXT = new Set([400, 404, 410]);
const LEASE_LOST = 'the lease on the peer was lost (the peer was removed, or another instance took over)';

/** A page that is refused whole: every object on it counted refused, the position left where it was. */
class PageRefused extends Error {
  readonly objects: number;
  constructor(message: string, objects: number) {
    super(message);
    this.objects = objects;
  }
}

/**
 * Reads what the peers' TAXII 2.1 collections added since the last read, page by page, as TAXII
 * 2.1 §3.4 and §5.4 define (`added_after`, `limit`, `next`, `more`, X-TAXII-Date-Added-Last), and
 * keeps the indicators it understands (peer-objects.ts). Every serving process runs one (started
 * on listen, app.ts); a lease per peer in the store lets one poll a peer at a time. Each page is
 * written with the collection's new position in one transaction, so a restart resumes where the
 * last written page ended: nothing skipped, and nothing read twice but the boundary object a
 * peer that forgot a `next` may send again (kept once: a row changes only for a newer version).
 */
export class PeerPoller {
  readonly holder = randomUUID();
  private readonly records: PeerRecords;
  private readonly reader: TaxiiReader;
  private readonly settings: PollerSettings;
  private readonly now: () => Date;
  private readonly onError: (err: unknown) => void;
  private timer: NodeJS.Timeout | undefined;
  private turn: Promise<void> | undefined;
  private stopping: AbortController | undefined;

  constructor(records: PeerRecords, reader: TaxiiReader, settings: Partial<PollerSettings> = {}, options: { now?: () => Date; onError?: (err: unknown) => void } = {}) {
    this.records = records;
    this.reader = reader;
    this.settings = { ...POLLER_DEFAULTS, ...settings };
    this.now = options.now ?? (() => new Date());
    this.onError = options.onError ?? (() => {});
  }

  get pageLimit(): number {
    return this.settings.pageLimit;
  }

  /** Polls due peers every tickMs until stop(). */
  start(): void {
    if (this.stopping) return;
    this.stopping = new AbortController();
    const schedule = () => {
      this.timer = setTimeout(() => {
        this.turn = this.pollDue()
          .then(() => undefined)
          .catch((err: unknown) => this.onError(err))
          .finally(() => {
            this.turn = undefined;
            if (this.stopping && !this.stopping.signal.aborted) schedule();
          });
      }, this.settings.tickMs);
      this.timer.unref();
    };
    schedule();
  }

  /** Stops the turns; a poll under way is aborted, its written pages kept, its lease released. */
  async stop(): Promise<void> {
    clearTimeout(this.timer);
    this.stopping?.abort(new Error('the server is stopping'));
    this.stopping = undefined;
    await this.turn;
  }

  /** Polls every peer whose turn has come and whose lease is free, one after the other. */
  async pollDue(): Promise<PollOutcome[]> {
    const outcomes: PollOutcome[] = [];
    for (;;) {
      const signal = this.stopping?.signal;
      if (signal?.aborted) return outcomes;
      const peer = await this.records.claimDue(this.holder, this.now().toISOString(), this.leaseUntil());
      if (!peer) return outcomes;
      outcomes.push(await this.poll(peer, signal));
    }
  }

  /** Polls one peer now, due or not (`tollwatch peers poll-now`); undefined when another instance is polling it. */
  async pollNow(peerId: string): Promise<PollOutcome | undefined> {
    const peer = await this.records.claim(peerId, this.holder, this.now().toISOString(), this.leaseUntil());
    return peer ? this.poll(peer, this.stopping?.signal) : undefined;
  }

  private leaseUntil(): string {
    return new Date(this.now().getTime() + this.settings.leaseMs).toISOString();
  }

  private async poll(peer: PeerToPoll, signal: AbortSignal | undefined): Promise<PollOutcome> {
    const counts: ObjectCounts = { read: 0, accepted: 0, skipped: 0, refused: 0 };
    /** Counts not written with a page: those of a page refused whole. */
    const unwritten: ObjectCounts = { read: 0, accepted: 0, skipped: 0, refused: 0 };
    let pages = 0;
    let stoppedShort: string | undefined;
    /** Each `next` the peer no longer knew, said in the status without failing the poll. */
    const forgotten: string[] = [];
    /** Why the first object refused on a written page was refused: the status names it. */
    let refusal: string | undefined;
    try {
      const positions = await this.records.positions(peer.id);
      collections: for (const collection of peer.collections) {
        let position = positions.get(collection) ?? { addedAfter: null, nextPage: null, writtenThrough: null };
        let newest: string | undefined;
        for (;;) {
          if (pages >= this.settings.maxPages) {
            stoppedShort = `stopped after ${pages} pages, the most one poll reads: the rest is read at the next poll`;
            break collections;
          }
          let answer;
          try {
            answer = await this.reader.get(this.objectsUrl(peer.apiRoot, collection, position), peer, signal);
          } catch (err) {
            // A `next` kept across polls may have expired on the peer's side (TAXII 2.1 leaves
            // its life to the server): the listing continues from where the last written page
            // ended. Objects added at that very instant may be read again; a version no newer
            // than the one kept is not written again.
            if (!(err instanceof PeerRequestFailed && position.nextPage && err.status !== undefined && STALE_NEXT.has(err.status))) throw err;
            const from = position.writtenThrough ?? position.addedAfter;
            position = { addedAfter: from, nextPage: null, writtenThrough: position.writtenThrough };
            forgotten.push(`the peer no longer knew the next kept for collection ${collection} (it ${err.message}): its listing continued from ${from ?? 'its start'}`);
            if (!(await this.records.savePage(peer.id, this.holder, { collection, position, indicators: [], counts: { read: 0, accepted: 0, skipped: 0, refused: 0 } }, this.leaseUntil(), this.settings.maxIndicatorsPerPeer))) {
              return { peer: peer.name, ok: false, pages, counts, error: LEASE_LOST };
            }
            continue;
          }
          pages++;
          let page: Page;
          try {
            page = this.readPage(answer.body);
          } catch (err) {
            if (err instanceof PageRefused) {
              unwritten.read += err.objects;
              unwritten.refused += err.objects;
            }
            throw err;
          }
          const date = answer.dateAddedLast && answer.dateAddedLast.length <= MAX_TOKEN && DATE_ADDED.test(answer.dateAddedLast) ? answer.dateAddedLast : undefined;
          if (date) newest = date;
          // Without the header (it is optional), the newest date_added known before this page.
          const writtenThrough = date ?? position.writtenThrough;
          let next: PeerPosition;
          if (page.more && page.next) next = { addedAfter: position.addedAfter, nextPage: page.next, writtenThrough };
          else if (page.more && date) next = { addedAfter: date, nextPage: null, writtenThrough };
          else if (page.more) throw new PeerRequestFailed('the peer answered more: true with neither next nor X-TAXII-Date-Added-Last, so its next page cannot be asked for');
          // Without the header (it is optional), the position stays: the collection is read
          // again from there, and versions already kept are not written again.
          else next = { addedAfter: newest ?? position.addedAfter, nextPage: null, writtenThrough };
          const saved = await this.records.savePage(peer.id, this.holder, { collection, position: next, indicators: page.indicators, counts: page.counts }, this.leaseUntil(), this.settings.maxIndicatorsPerPeer);
          if (!saved) return { peer: peer.name, ok: false, pages, counts, error: LEASE_LOST };
          add(counts, { ...page.counts, accepted: page.counts.accepted - saved.overLimit, refused: page.counts.refused + saved.overLimit });
          refusal ??= page.refusal ?? (saved.overLimit > 0 ? `new indicators past the ${this.settings.maxIndicatorsPerPeer} kept of one peer` : undefined);
          position = next;
          if (!page.more) continue collections;
        }
      }
      const at = this.now();
      const warnings = [
        ...(counts.refused > 0 ? [`${counts.refused} object${counts.refused === 1 ? '' : 's'} refused, the first for ${refusal}`] : []),
        ...forgotten,
        ...(stoppedShort ? [stoppedShort] : []),
      ];
      await this.records.finish(peer.id, this.holder, {
        ok: true,
        at: at.toISOString(),
        // Stopped short, the rest is read after a short pause rather than a whole interval.
        nextPollAt: new Date(at.getTime() + (stoppedShort ? Math.min(peer.pollSeconds * 1000, this.settings.backoffMs) : peer.pollSeconds * 1000)).toISOString(),
        ...(warnings.length > 0 ? { warning: warnings.join('; ') } : {}),
      });
      return { peer: peer.name, ok: true, pages, counts, ...(warnings.length > 0 ? { error: warnings.join('; ') } : {}) };
    } catch (err) {
      const message = err instanceof PeerRequestFailed || err instanceof PageRefused ? err.message : signal?.aborted ? 'the poll was stopped with the server' : 'the poll failed on our side';
      if (!(err instanceof PeerRequestFailed || err instanceof PageRefused) && !signal?.aborted) this.onError(err);
      const failures = peer.failures + 1;
      const backoff = Math.min(this.settings.backoffMs * 2 ** Math.min(failures - 1, 30), this.settings.maxBackoffMs);
      const wait = Math.max(backoff, err instanceof PeerRequestFailed ? (err.retryAfterMs ?? 0) : 0);
      const at = this.now();
      add(counts, unwritten);
      try {
        await this.records.finish(peer.id, this.holder, { ok: false, at: at.toISOString(), nextPollAt: new Date(at.getTime() + Math.min(wait, this.settings.maxBackoffMs)).toISOString(), error: message, failures, counts: unwritten });
      } catch (finishErr) {
        // The lease runs out by itself; the next turn tries again.
        this.onError(finishErr);
      }
      return { peer: peer.name, ok: false, pages, counts, error: message };
    }
  }

  /** `{api_root}/collections/{id}/objects/` with the page's filters (TAXII 2.1 §5.4). */
  private objectsUrl(apiRoot: string, collection: string, position: PeerPosition): string {
    const url = new URL(`collections/${encodeURIComponent(collection)}/objects/`, apiRoot);
    url.searchParams.set('limit', String(this.settings.pageLimit));
    if (position.addedAfter) url.searchParams.set('added_after', position.addedAfter);
    if (position.nextPage) url.searchParams.set('next', position.nextPage);
    return url.href;
  }

  /** An envelope (TAXII 2.1 §3.7) read whole, or PageRefused. */
  private readPage(body: unknown): Page {
    if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new PageRefused('the peer answered an envelope that is not a JSON object', 0);
    const envelope = body as Record<string, unknown>;
    const objects = envelope.objects ?? [];
    if (!Array.isArray(objects)) throw new PageRefused("the peer answered an envelope whose objects are not a list", 0);
    if (objects.length > this.settings.pageLimit) {
      throw new PageRefused(`the peer answered a page of ${objects.length} objects when at most ${this.settings.pageLimit} were asked for: the page was refused whole`, objects.length);
    }
    if (envelope.more !== undefined && typeof envelope.more !== 'boolean') throw new PageRefused('the peer answered an envelope whose more is not true or false', objects.length);
    const next = envelope.next;
    if (next !== undefined && (typeof next !== 'string' || next.length === 0 || next.length > MAX_TOKEN || /[\u0000-\u001f\u007f]/.test(next))) {
      throw new PageRefused(`the peer answered an envelope whose next is not a string of at most ${MAX_TOKEN} characters`, objects.length);
    }
    const counts: ObjectCounts = { read: objects.length, accepted: 0, skipped: 0, refused: 0 };
    // One row per object: of several versions on one page, the latest.
    const latest = new Map<string, PeerIndicator>();
    let refusal: string | undefined;
    for (const object of objects) {
      const read = readPeerObject(object);
      if (read.verdict === 'skipped') counts.skipped++;
      else if (read.verdict === 'refused') {
        counts.refused++;
        refusal ??= read.why;
      }
      else {
        counts.accepted++;
        const kept = latest.get(read.indicator.objectId);
        if (!kept || kept.modified < read.indicator.modified || (kept.modified === read.indicator.modified && read.indicator.revoked)) latest.set(read.indicator.objectId, read.indicator);
      }
    }
    return { indicators: [...latest.values()], counts, more: envelope.more === true, ...(typeof next === 'string' ? { next } : {}), ...(refusal ? { refusal } : {}) };
  }
}

interface Page {
  indicators: PeerIndicator[];
  counts: ObjectCounts;
  more: boolean;
  next?: string;
  refusal?: string;
}

function add(to: ObjectCounts, from: ObjectCounts): void {
  to.read += from.read;
  to.accepted += from.accepted;
  to.skipped += from.skipped;
  to.refused += from.refused;
}

import type { IndicatorKind, StixIndicator } from '../../domain/intelligence/stix-indicators.ts';
import type { CandidatePage, PublicationState, StateChange, TaxiiPublicationStore } from '../../domain/intelligence/taxii-publication.ts';
import type { Candidate, NewVersion } from '../../domain/intelligence/taxii-versions.ts';
import type { PeerValueKind } from '../../domain/federation/peer-evidence.ts';
import { pruneInBatches, type SqlTaxiiRepository } from '../repositories/taxii-repository.ts';
import type { WriterThread } from './writer-thread.ts';

/**
 * The TAXII publisher's store on a SQLite file: reads on this thread, writes on the writer
 * thread. A write on this thread's connection waits for SQLite's one write lock while intake's
 * thread holds it, and better-sqlite3 waits by sleeping this thread, every request with it: under
 * sustained intake the soak's p99 rose from 83 to 218 ms and its rate fell by half
 * (docs/performance.md, "TAXII collections"). On the writer thread the publisher's transactions
 * take their turn with intake's groups and the fold's steps instead. Reads need no lock (WAL).
 */
export class TaxiiStoreOnWriter implements TaxiiPublicationStore {
  private readonly reads: SqlTaxiiRepository;
  private readonly writer: WriterThread;

  constructor(reads: SqlTaxiiRepository, writer: WriterThread) {
    this.reads = reads;
    this.writer = writer;
  }

  stateOf(kind: IndicatorKind): Promise<PublicationState | undefined> {
    return this.reads.stateOf(kind);
  }

  foldSignature(): Promise<string> {
    return this.reads.foldSignature();
  }

  latestChange(kind: IndicatorKind): Promise<string | undefined> {
    return this.reads.latestChange(kind);
  }

  changedAfter(kind: IndicatorKind, since: string, page: string | undefined, limit: number): Promise<CandidatePage> {
    return this.reads.changedAfter(kind, since, page, limit);
  }

  seenSince(kind: IndicatorKind, since: string, page: string | undefined, limit: number): Promise<CandidatePage> {
    return this.reads.seenSince(kind, since, page, limit);
  }

  liveObjects(kind: IndicatorKind, page: string | undefined, limit: number): Promise<CandidatePage> {
    return this.reads.liveObjects(kind, page, limit);
  }

  peerValuesAfter(kind: PeerValueKind, after: number, through: number, limit: number): Promise<Array<{ value: string; seq: number }>> {
    return this.reads.peerValuesAfter(kind, after, through, limit);
  }

  candidatesOf(kind: IndicatorKind, values: string[]): Promise<Candidate[]> {
    return this.reads.candidatesOf(kind, values);
  }

  latestBodies(kind: IndicatorKind, objectIds: string[]): Promise<Map<string, StixIndicator>> {
    return this.reads.latestBodies(kind, objectIds);
  }

  async claim(kind: IndicatorKind, holder: string, now: string, until: string): Promise<PublicationState | undefined> {
    return (await this.writer.write({ store: 'taxii', method: 'claim', args: [kind, holder, now, until] })) as PublicationState | undefined;
  }

  async release(kind: IndicatorKind, holder: string): Promise<void> {
    await this.writer.write({ store: 'taxii', method: 'release', args: [kind, holder] });
  }

  async publish(kind: IndicatorKind, holder: string, versions: NewVersion[], state: StateChange, leaseUntil: string): Promise<boolean> {
    return (await this.writer.write({ store: 'taxii', method: 'publish', args: [kind, holder, versions, state, leaseUntil] })) as boolean;
  }

  /** A batch per request, so that intake's groups take their turns between them. */
  prune(kind: IndicatorKind, cutoff: string): Promise<number> {
    return pruneInBatches(async () => (await this.writer.write({ store: 'taxii', method: 'pruneBatch', args: [kind, cutoff] })) as number);
  }
}

import type { PeerIndicator } from './peer-objects.ts';
import type { PeerAuth, PeerChanges, PeerSettings } from './peer-settings.ts';

/** How far a peer's polling has come (docs/federation.md, "Status"). */
export interface PeerStatus {
  lastSuccessAt: string | null;
  lastError: string | null;
  lastErrorAt: string | null;
  /** No poll before this instant: the interval, a Retry-After, or the back-off after errors. */
  nextPollAt: string | null;
  /** Polls failed in a row since the last success. */
  failures: number;
  /** Whether an instance holds the peer's lease now (a poll is under way). */
  polling: boolean;
  objectsRead: number;
  objectsAccepted: number;
  objectsSkipped: number;
  objectsRefused: number;
}

/** A peer as the operator sees it: never its credential. */
export interface PeerView {
  id: string;
  name: string;
  apiRoot: string;
  collections: string[];
  auth: PeerAuth;
  username: string | null;
  hasCredential: boolean;
  trust: number;
  pollSeconds: number;
  republish: boolean;
  enabled: boolean;
  createdAt: string;
  status: PeerStatus;
}

/** What the poller needs of a peer it holds the lease of: its credential opened. */
export interface PeerToPoll extends Pick<PeerView, 'id' | 'name' | 'apiRoot' | 'collections' | 'auth' | 'username' | 'pollSeconds'> {
  credential: string | null;
  failures: number;
}

/** Where reading one collection of a peer stands (`peer_positions`). */
export interface PeerPosition {
  /** The `added_after` to send: the newest date_added read so far, as the peer wrote it. */
  addedAfter: string | null;
  /** A `next` the peer gave when a poll stopped between pages, sent with the same `added_after`. */
  nextPage: string | null;
  /**
   * Where the last written page ended: its X-TAXII-Date-Added-Last, or without one the newest
   * date_added known before it. A `next` the peer no longer knows is replaced by this as `added_after`.
   */
  writtenThrough: string | null;
}

/** What one page brings to the store. */
export interface SavedPage {
  collection: string;
  position: PeerPosition;
  indicators: PeerIndicator[];
  counts: ObjectCounts;
}

/** Objects of one page or one poll, by what became of them. */
export interface ObjectCounts {
  read: number;
  accepted: number;
  skipped: number;
  refused: number;
}

export const NO_COUNTS: ObjectCounts = { read: 0, accepted: 0, skipped: 0, refused: 0 };

/** How a poll ended, written with the lease's release. */
export type PollEnd =
  | { ok: true; at: string; nextPollAt: string; warning?: string }
  | { ok: false; at: string; nextPollAt: string; error: string; failures: number; counts: ObjectCounts };

/**
 * The peers and what they said, in the store (store/repositories/peers-repository.ts). Writes
 * to `peer_indicators` give each row a `seq` above every one before, in commit order.
 */
export interface PeerRecords {
  add(id: string, settings: PeerSettings, createdAt: string): Promise<PeerView>;
  list(): Promise<PeerView[]>;
  /** By id or by name. */
  find(idOrName: string): Promise<PeerView | undefined>;
  /** Marks every indicator of the peer revoked (new seqs), forgets its positions, removes the peer; the rows revoked. */
  remove(id: string): Promise<number>;
  setEnabled(id: string, enabled: boolean): Promise<void>;
  change(id: string, changes: PeerChanges): Promise<void>;
  /** Makes the peer due now, past its interval and back-off. */
  pollSoon(id: string, now: string): Promise<void>;

  /** Takes the lease of one enabled peer whose turn has come, if any is free. */
  claimDue(holder: string, now: string, leaseUntil: string): Promise<PeerToPoll | undefined>;
  /** Takes the lease of this peer, due or not, unless another holder's lease runs. */
  claim(id: string, holder: string, now: string, leaseUntil: string): Promise<PeerToPoll | undefined>;
  positions(peerId: string): Promise<Map<string, PeerPosition>>;
  /**
   * One page in one transaction: its indicators (each written only when newer than the version
   * kept), the collection's new position, the counts, and the lease renewed. A new indicator
   * past `maxKept` rows of the peer is not written: counted refused (`overLimit`), not accepted.
   * False, writing nothing, when the lease is no longer this holder's (or the peer was removed).
   */
  savePage(peerId: string, holder: string, page: SavedPage, leaseUntil: string, maxKept: number): Promise<{ overLimit: number } | false>;
  /** Ends a poll: its outcome in the status, the next turn, the lease released. */
  finish(peerId: string, holder: string, end: PollEnd): Promise<void>;
}

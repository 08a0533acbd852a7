/**
 * What the peers said (docs/federation.md), kept in memory for the lookups: the latest version of
 * each peer indicator the poller stored (migration 030's `peer_indicators`), by value, with the
 * trust the operator gives each peer. Every server keeps its own copy and reads only the rows
 * written since its last read (`seq` grows with every write, on any instance), so a poll on one
 * instance reaches the lookups of all within one refresh.
 */

/** A peer as the evidence needs it (migration 030's `peers`). */
export interface PeerRow {
  peer_id: string;
  name: string;
  trust: number;
  republish: number;
  enabled: number;
}

/** One stored peer indicator (migration 030's `peer_indicators`). */
export interface PeerIndicatorRow {
  peer_id: string;
  object_id: string;
  kind: string;
  value: string;
  confidence: number;
  valid_from: string;
  modified: string;
  valid_until: string | null;
  revoked: number;
  tlp: string | null;
  seq: number | string;
}

/** What the evidence reads of the store. */
export interface PeerEvidenceStore {
  peers(): Promise<PeerRow[]>;
  /** Rows written after `seq`, in `seq` order, at most `limit`. */
  indicatorsAfter(seq: number, limit: number): Promise<PeerIndicatorRow[]>;
}

export type PeerValueKind = 'number' | 'ip';

/** One peer's say about a value, as this server weighs it. */
export interface PeerSighting {
  peer: string;
  /** 0–1, the operator's trust in the peer. */
  trust: number;
  /** 0–100: the highest confidence among the peer's live indicators of the value. */
  confidence: number;
  /** The earliest `valid_from` among them: for a Tollwatch peer, its first sighting. */
  validFrom: string;
  /** The latest `modified` among them. */
  modified: string;
  /** When the last of them ends; absent when one has no end. */
  validUntil?: string;
  /** The most restrictive TLP marking among them, if any. */
  tlp?: string;
  /** Whether the operator lets what this peer says be published again (TLP permitting). */
  republish: boolean;
}

/** How often a serving process reads what the peers' polls wrote: a poll reaches every instance's lookups within this. */
export const PEER_EVIDENCE_REFRESH_MS = 2000;

/** Rows read per statement while catching up. */
const PAGE = 5000;

/** TLP markings from least to most restrictive (TLP 2.0; TLP 1.0's white is stored as clear). */
const TLP_ORDER = ['clear', 'green', 'amber', 'amber+strict', 'red'];

/** The markings under which a peer's say may be passed on, when the operator lets that peer's be: never AMBER or RED. */
const PASSABLE_TLP = new Set([undefined, 'clear', 'green']);

/** Whether a sighting may be published again (docs/federation.md, "Scores and publication"). */
export function passable(sighting: PeerSighting): boolean {
  return sighting.republish && PASSABLE_TLP.has(sighting.tlp);
}

/** A value with sightings that may be passed on, and those sightings. */
export interface PassableValue {
  value: string;
  sightings: readonly PeerSighting[];
}

interface Held {
  row: PeerIndicatorRow;
  /** Its value's key in `byValue`. */
  at: string;
}

interface Worked {
  version: number;
  /** Until when the list holds: the first `valid_until` still ahead among the rows behind it. */
  until: number;
  sightings: readonly PeerSighting[] | undefined;
}

export class PeerEvidence {
  private readonly store: PeerEvidenceStore;
  private readonly onError: (err: unknown) => void;
  /** Rows by `${kind} ${value}`, then by `${peer_id} ${object_id}`. */
  private readonly byValue = new Map<string, Map<string, PeerIndicatorRow>>();
  private readonly byObject = new Map<string, Held>();
  private peers = new Map<string, PeerRow>();
  private peersText = '';
  private seq = 0;
  /** Moves whenever a row or a peer changes: lists worked out before are worked out again. */
  private version = 0;
  private readonly worked = new Map<string, Worked>();
  private timer: NodeJS.Timeout | undefined;
  private refreshing: Promise<void> | undefined;

  constructor(store: PeerEvidenceStore, onError: (err: unknown) => void = () => {}) {
    this.store = store;
    this.onError = onError;
  }

  /** Whether any peer indicator is held: a lookup asks nothing more when none is. */
  get empty(): boolean {
    return this.byValue.size === 0;
  }

  /**
   * The live sightings of a value, strongest first: not revoked, not past `valid_until`, from an
   * enabled peer. Undefined when there are none. The same array while nothing changed, so a
   * caller may keep what it worked out from it by identity.
   */
  of(kind: PeerValueKind, value: string, now: number = Date.now()): readonly PeerSighting[] | undefined {
    if (this.byValue.size === 0) return undefined;
    const key = `${kind} ${value}`;
    const rows = this.byValue.get(key);
    if (!rows) return undefined;
    const kept = this.worked.get(key);
    if (kept && kept.version === this.version && now < kept.until) return kept.sightings;
    const made = this.sightingsOf(rows, now);
    this.worked.set(key, { version: this.version, ...made });
    return made.sightings;
  }

  private sightingsOf(rows: Map<string, PeerIndicatorRow>, now: number): Omit<Worked, 'version'> {
    const byPeer = new Map<string, PeerSighting & { open: boolean }>();
    let until = Infinity;
    for (const row of rows.values()) {
      const peer = this.peers.get(row.peer_id);
      if (!peer || peer.enabled !== 1 || row.revoked === 1) continue;
      const ends = row.valid_until === null ? Infinity : Date.parse(row.valid_until);
      if (!(ends > now)) continue;
      until = Math.min(until, ends);
      const had = byPeer.get(row.peer_id);
      if (!had) {
        byPeer.set(row.peer_id, {
          peer: peer.name,
          trust: peer.trust,
          confidence: row.confidence,
          validFrom: row.valid_from,
          modified: row.modified,
          ...(row.valid_until === null ? {} : { validUntil: row.valid_until }),
          ...(row.tlp === null ? {} : { tlp: row.tlp }),
          republish: peer.republish === 1,
          open: row.valid_until === null,
        });
        continue;
      }
      had.confidence = Math.max(had.confidence, row.confidence);
      if (row.valid_from < had.validFrom) had.validFrom = row.valid_from;
      if (row.modified > had.modified) had.modified = row.modified;
      had.open ||= row.valid_until === null;
      if (had.open) delete had.validUntil;
      else if (row.valid_until !== null && (had.validUntil === undefined || row.valid_until > had.validUntil)) had.validUntil = row.valid_until;
      if (row.tlp !== null && TLP_ORDER.indexOf(row.tlp) > TLP_ORDER.indexOf(had.tlp ?? 'clear')) had.tlp = row.tlp;
    }
    if (byPeer.size === 0) return { until, sightings: undefined };
    const sightings = [...byPeer.values()]
      .map(({ open: _open, ...sighting }) => sighting)
      .sort((a, b) => b.trust * b.confidence - a.trust * a.confidence || a.peer.localeCompare(b.peer));
    return { until, sightings };
  }

  /** The sightings of a value that may be passed on (`passable`), undefined when none. */
  passableOf(kind: PeerValueKind, value: string, now: number = Date.now()): readonly PeerSighting[] | undefined {
    const all = this.of(kind, value, now);
    if (!all) return undefined;
    const some = all.filter(passable);
    return some.length === 0 ? undefined : some.length === all.length ? all : some;
  }

  /** Every value of a kind with sightings that may be passed on, in no order. */
  passableValues(kind: PeerValueKind, now: number = Date.now()): PassableValue[] {
    const values: PassableValue[] = [];
    if (this.byValue.size === 0) return values;
    const head = `${kind} `;
    for (const key of this.byValue.keys()) {
      if (!key.startsWith(head)) continue;
      const value = key.slice(head.length);
      const sightings = this.passableOf(kind, value, now);
      if (sightings) values.push({ value, sightings });
    }
    return values;
  }

  /** The `seq` of the latest row read: every row written up to it is held. */
  get through(): number {
    return this.seq;
  }

  /** The peers' names, trust and settings as last read: it changes whenever one of them does. */
  get peersSignature(): string {
    return this.peersText;
  }

  /** Values of a kind with a held indicator whose `valid_until` falls after `from` and at or before `to` (ms). */
  endingBetween(kind: PeerValueKind, from: number, to: number): string[] {
    const values = new Set<string>();
    for (const { row } of this.byObject.values()) {
      if (row.kind !== kind || row.valid_until === null) continue;
      const ends = Date.parse(row.valid_until);
      if (ends > from && ends <= to) values.add(row.value);
    }
    return [...values];
  }

  /** Reads the peers and every row written since the last read; concurrent calls share one read. */
  refresh(): Promise<void> {
    this.refreshing ??= this.catchUp().finally(() => {
      this.refreshing = undefined;
    });
    return this.refreshing;
  }

  private async catchUp(): Promise<void> {
    const peers = await this.store.peers();
    const text = JSON.stringify(peers.map((p) => [p.peer_id, p.name, p.trust, p.republish, p.enabled]).sort());
    if (text !== this.peersText) {
      this.peers = new Map(peers.map((p) => [p.peer_id, p]));
      this.peersText = text;
      this.version += 1;
    }
    for (;;) {
      const rows = await this.store.indicatorsAfter(this.seq, PAGE);
      for (const row of rows) this.apply(row);
      if (rows.length > 0) this.version += 1;
      if (rows.length < PAGE) return;
    }
  }

  private apply(row: PeerIndicatorRow): void {
    this.seq = Math.max(this.seq, Number(row.seq));
    const object = `${row.peer_id} ${row.object_id}`;
    const before = this.byObject.get(object);
    if (before) {
      const rows = this.byValue.get(before.at);
      rows?.delete(object);
      if (rows?.size === 0) {
        this.byValue.delete(before.at);
        this.worked.delete(before.at);
      }
      this.byObject.delete(object);
    }
    // A revoked indicator ends the peer's say: it is dropped, not kept as such.
    if (row.revoked === 1 || (row.kind !== 'number' && row.kind !== 'ip')) return;
    const at = `${row.kind} ${row.value}`;
    let rows = this.byValue.get(at);
    if (!rows) this.byValue.set(at, (rows = new Map()));
    rows.set(object, row);
    this.byObject.set(object, { row, at });
  }

  /** Refreshes every `intervalMs` until stop(); a failed read is reported and tried again at the next turn. */
  start(intervalMs: number): void {
    if (this.timer) return;
    const turn = () => {
      this.timer = setTimeout(() => {
        this.refresh()
          .catch(this.onError)
          .finally(() => {
            if (this.timer) turn();
          });
      }, intervalMs);
      this.timer.unref();
    };
    turn();
  }

  async stop(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.refreshing?.catch(() => undefined);
  }
}

import type { Kysely, Selectable, Transaction } from 'kysely';
import type { KeySealer } from '../../domain/accounts/key-sealing.ts';
import type { PeerIndicator } from '../../domain/federation/peer-objects.ts';
import type { PeerPosition, PeerRecords, PeerToPoll, PeerView, PollEnd, SavedPage } from '../../domain/federation/peer-records.ts';
import type { PeerAuth, PeerChanges, PeerSettings } from '../../domain/federation/peer-settings.ts';
import { holdAdvisoryLock } from '../advisory-locks.ts';
import type { DialectCapabilities } from '../dialect.ts';
import { chunks } from '../fold/ingest-writes.ts';
import type { PeersTable, Schema } from '../schema.ts';

/** Where a peer's sealed credential belongs: sealed for this row, it opens nowhere else. */
export function peerCredentialContext(peerId: string): string {
  return `peers/${peerId}/credential`;
}

/** Rows per insert: twelve parameters each, well inside both stores' limits. */
const ROWS_PER_INSERT = 200;
/** Ids per `in (…)` read. */
const IDS_PER_READ = 500;

/** A peer, the polls' positions and what the peers said (migration 030); credentials sealed with the key secret. */
export class SqlPeersRepository implements PeerRecords {
  private readonly db: Kysely<Schema>;
  private readonly caps: DialectCapabilities;
  private readonly sealer: KeySealer;

  constructor(db: Kysely<Schema>, caps: DialectCapabilities, sealer: KeySealer) {
    this.db = db;
    this.caps = caps;
    this.sealer = sealer;
  }

  async add(id: string, s: PeerSettings, createdAt: string): Promise<PeerView> {
    await this.db
      .insertInto('peers')
      .values({
        peer_id: id,
        name: s.name,
        api_root: s.apiRoot,
        collections: JSON.stringify(s.collections),
        auth: s.auth,
        username: s.username,
        credential: s.credential === null ? null : this.sealer.seal(s.credential, peerCredentialContext(id)),
        trust: s.trust,
        poll_seconds: s.pollSeconds,
        republish: s.republish ? 1 : 0,
        enabled: s.enabled ? 1 : 0,
        created_at: createdAt,
        holder: null,
        lease_until: null,
        next_poll_at: null,
        last_success_at: null,
        last_error: null,
        last_error_at: null,
      })
      .execute();
    return (await this.find(id))!;
  }

  async list(): Promise<PeerView[]> {
    const rows = await this.db.selectFrom('peers').selectAll().orderBy('name').execute();
    const now = new Date().toISOString();
    return rows.map((row) => viewOf(row, now));
  }

  async find(idOrName: string): Promise<PeerView | undefined> {
    const row = await this.db
      .selectFrom('peers')
      .selectAll()
      .where((eb) => eb.or([eb('peer_id', '=', idOrName), eb('name', '=', idOrName)]))
      .executeTakeFirst();
    return row && viewOf(row, new Date().toISOString());
  }

  async remove(id: string): Promise<number> {
    return this.db.transaction().execute(async (trx) => {
      // The peer first: a poll under way finds its lease gone and writes nothing more.
      await trx.deleteFrom('peers').where('peer_id', '=', id).execute();
      await trx.deleteFrom('peer_positions').where('peer_id', '=', id).execute();
      const live = await trx.selectFrom('peer_indicators').select('object_id').where('peer_id', '=', id).where('revoked', '=', 0).orderBy('object_id').execute();
      if (live.length === 0) return 0;
      // Kept, revoked, each with a new seq: a server that reads only what changed must see them go.
      let seq = await this.topSeq(trx);
      for (const { object_id } of live) {
        await trx.updateTable('peer_indicators').set({ revoked: 1, seq: ++seq }).where('peer_id', '=', id).where('object_id', '=', object_id).execute();
      }
      return live.length;
    });
  }

  async setEnabled(id: string, enabled: boolean): Promise<void> {
    // Enabled again, it is polled at once rather than after the back-off it had.
    await this.db.updateTable('peers').set({ enabled: enabled ? 1 : 0, ...(enabled ? { next_poll_at: null, failures: 0 } : {}) }).where('peer_id', '=', id).execute();
  }

  async change(id: string, c: PeerChanges): Promise<void> {
    await this.db
      .updateTable('peers')
      .set({
        ...(c.trust !== undefined ? { trust: c.trust } : {}),
        ...(c.pollSeconds !== undefined ? { poll_seconds: c.pollSeconds } : {}),
        ...(c.republish !== undefined ? { republish: c.republish ? 1 : 0 } : {}),
      })
      .where('peer_id', '=', id)
      .execute();
  }

  async pollSoon(id: string, now: string): Promise<void> {
    await this.db.updateTable('peers').set({ next_poll_at: now }).where('peer_id', '=', id).execute();
  }

  async claimDue(holder: string, now: string, leaseUntil: string): Promise<PeerToPoll | undefined> {
    const due = await this.db
      .selectFrom('peers')
      .select('peer_id')
      .where('enabled', '=', 1)
      .where((eb) => eb.or([eb('next_poll_at', 'is', null), eb('next_poll_at', '<=', now)]))
      .where((eb) => eb.or([eb('holder', 'is', null), eb('lease_until', '<', now), eb('holder', '=', holder)]))
      .orderBy('next_poll_at')
      .limit(10)
      .execute();
    for (const { peer_id } of due) {
      const claimed = await this.take(peer_id, holder, now, leaseUntil, true);
      if (claimed) return claimed;
    }
    return undefined;
  }

  claim(id: string, holder: string, now: string, leaseUntil: string): Promise<PeerToPoll | undefined> {
    return this.take(id, holder, now, leaseUntil, false);
  }

  private async take(id: string, holder: string, now: string, leaseUntil: string, dueOnly: boolean): Promise<PeerToPoll | undefined> {
    let update = this.db
      .updateTable('peers')
      .set({ holder, lease_until: leaseUntil })
      .where('peer_id', '=', id)
      .where((eb) => eb.or([eb('holder', 'is', null), eb('lease_until', '<', now), eb('holder', '=', holder)]));
    if (dueOnly) update = update.where('enabled', '=', 1).where((eb) => eb.or([eb('next_poll_at', 'is', null), eb('next_poll_at', '<=', now)]));
    const taken = await update.executeTakeFirst();
    if (Number(taken.numUpdatedRows) !== 1) return undefined;
    const row = await this.db.selectFrom('peers').selectAll().where('peer_id', '=', id).executeTakeFirst();
    if (!row) return undefined;
    const { id: peerId, name, apiRoot, collections, auth, username, pollSeconds, status } = viewOf(row, now);
    return { id: peerId, name, apiRoot, collections, auth, username, pollSeconds, failures: status.failures, credential: row.credential === null ? null : this.sealer.open(row.credential, peerCredentialContext(row.peer_id)) };
  }

  async positions(peerId: string): Promise<Map<string, PeerPosition>> {
    const rows = await this.db.selectFrom('peer_positions').selectAll().where('peer_id', '=', peerId).execute();
    return new Map(rows.map((r) => [r.collection_id, { addedAfter: r.added_after, nextPage: r.next_page, writtenThrough: r.written_through }]));
  }

  async savePage(peerId: string, holder: string, page: SavedPage, leaseUntil: string, maxKept: number): Promise<{ overLimit: number } | false> {
    return this.db.transaction().execute(async (trx) => {
      // A write first: it takes SQLite's one write lock, and on PostgreSQL the peer's row, so a
      // removal or another claim waits for this commit, and this page is written only under the lease.
      const renewed = await trx.updateTable('peers').set({ lease_until: leaseUntil }).where('peer_id', '=', peerId).where('holder', '=', holder).executeTakeFirst();
      if (Number(renewed.numUpdatedRows) !== 1) return false;
      const overLimit = await this.writeIndicators(trx, peerId, page.indicators, maxKept);
      const { read, accepted, skipped, refused } = page.counts;
      await trx
        .updateTable('peers')
        .set((eb) => ({
          objects_read: eb('objects_read', '+', read),
          objects_accepted: eb('objects_accepted', '+', accepted - overLimit),
          objects_skipped: eb('objects_skipped', '+', skipped),
          objects_refused: eb('objects_refused', '+', refused + overLimit),
        }))
        .where('peer_id', '=', peerId)
        .execute();
      const { addedAfter, nextPage, writtenThrough } = page.position;
      const position = { added_after: addedAfter, next_page: nextPage, written_through: writtenThrough };
      await trx
        .insertInto('peer_positions')
        .values({ peer_id: peerId, collection_id: page.collection, ...position })
        .onConflict((oc) => oc.columns(['peer_id', 'collection_id']).doUpdateSet(position))
        .execute();
      return { overLimit };
    });
  }

  /**
   * Writes the versions newer than those kept (a revocation of the kept version counts as
   * newer), each with the next seq; how many new ones were left out, past `maxKept` rows.
   */
  private async writeIndicators(trx: Transaction<Schema>, peerId: string, indicators: PeerIndicator[], maxKept: number): Promise<number> {
    if (indicators.length === 0) return 0;
    const kept = new Map<string, { modified: string; revoked: number }>();
    for (const ids of chunks(indicators.map((i) => i.objectId), IDS_PER_READ)) {
      const rows = await trx.selectFrom('peer_indicators').select(['object_id', 'modified', 'revoked']).where('peer_id', '=', peerId).where('object_id', 'in', ids).execute();
      for (const r of rows) kept.set(r.object_id, r);
    }
    let newer = indicators.filter((i) => {
      const k = kept.get(i.objectId);
      return !k || i.modified > k.modified || (i.modified === k.modified && i.revoked && k.revoked === 0);
    });
    const fresh = newer.filter((i) => !kept.has(i.objectId));
    let overLimit = 0;
    if (fresh.length > 0) {
      const row = await trx.selectFrom('peer_indicators').select((eb) => eb.fn.countAll<number | string>().as('n')).where('peer_id', '=', peerId).executeTakeFirst();
      const room = Math.max(0, maxKept - Number(row?.n ?? 0));
      if (fresh.length > room) {
        const left = new Set(fresh.slice(room).map((i) => i.objectId));
        overLimit = left.size;
        newer = newer.filter((i) => !left.has(i.objectId));
      }
    }
    if (newer.length === 0) return overLimit;
    await holdAdvisoryLock(trx, this.caps, 'peerIndicators');
    let seq = await this.topSeq(trx);
    for (const batch of chunks(newer, ROWS_PER_INSERT)) {
      await trx
        .insertInto('peer_indicators')
        .values(
          batch.map((i) => ({
            peer_id: peerId,
            object_id: i.objectId,
            kind: i.kind,
            value: i.value,
            confidence: i.confidence,
            valid_from: i.validFrom,
            modified: i.modified,
            valid_until: i.validUntil,
            revoked: i.revoked ? 1 : 0,
            tlp: i.tlp,
            seq: ++seq,
          })),
        )
        .onConflict((oc) =>
          oc.columns(['peer_id', 'object_id']).doUpdateSet((eb) => ({
            kind: eb.ref('excluded.kind'),
            value: eb.ref('excluded.value'),
            confidence: eb.ref('excluded.confidence'),
            valid_from: eb.ref('excluded.valid_from'),
            modified: eb.ref('excluded.modified'),
            valid_until: eb.ref('excluded.valid_until'),
            revoked: eb.ref('excluded.revoked'),
            tlp: eb.ref('excluded.tlp'),
            seq: eb.ref('excluded.seq'),
          })),
        )
        .execute();
    }
    return overLimit;
  }

  /** The highest seq written, under the lock that keeps it ours until commit. */
  private async topSeq(trx: Transaction<Schema>): Promise<number> {
    await holdAdvisoryLock(trx, this.caps, 'peerIndicators');
    const top = await trx.selectFrom('peer_indicators').select((eb) => eb.fn.max('seq').as('top')).executeTakeFirst();
    return Number(top?.top ?? 0);
  }

  async finish(peerId: string, holder: string, end: PollEnd): Promise<void> {
    const released = { holder: null, lease_until: null, next_poll_at: end.nextPollAt };
    const update = end.ok
      ? this.db.updateTable('peers').set({ ...released, failures: 0, last_success_at: end.at, ...(end.warning ? { last_error: end.warning, last_error_at: end.at } : {}) })
      : this.db.updateTable('peers').set((eb) => ({
          ...released,
          failures: end.failures,
          last_error: end.error,
          last_error_at: end.at,
          objects_read: eb('objects_read', '+', end.counts.read),
          objects_refused: eb('objects_refused', '+', end.counts.refused),
        }));
    await update.where('peer_id', '=', peerId).where('holder', '=', holder).execute();
  }
}

function viewOf(row: Selectable<PeersTable>, now: string): PeerView {
  return {
    id: row.peer_id,
    name: row.name,
    apiRoot: row.api_root,
    collections: JSON.parse(row.collections) as string[],
    auth: row.auth as PeerAuth,
    username: row.username,
    hasCredential: row.credential !== null,
    trust: Number(row.trust),
    pollSeconds: row.poll_seconds,
    republish: row.republish === 1,
    enabled: row.enabled === 1,
    createdAt: row.created_at,
    status: {
      lastSuccessAt: row.last_success_at,
      lastError: row.last_error,
      lastErrorAt: row.last_error_at,
      nextPollAt: row.next_poll_at,
      failures: Number(row.failures),
      polling: row.holder !== null && row.lease_until !== null && row.lease_until > now,
      objectsRead: Number(row.objects_read),
      objectsAccepted: Number(row.objects_accepted),
      objectsSkipped: Number(row.objects_skipped),
      objectsRefused: Number(row.objects_refused),
    },
  };
}

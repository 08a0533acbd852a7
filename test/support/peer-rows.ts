import { randomUUID } from 'node:crypto';
import type { Harness } from './harness.ts';

/**
 * Peers and their indicators written into migration 030's tables as the operator's commands and
 * the poller write them (one row per peer and STIX id, a `seq` that grows with every write), then
 * read into the serving process's memory as every instance reads them.
 */
export interface PeerRows {
  /** Adds a peer; its id. */
  peer(name: string, trust: number, settings?: { enabled?: number; republish?: number }): Promise<string>;
  /** A peer indicator's latest version: a new seq each write. Its STIX id. */
  say(peer_id: string, kind: 'number' | 'ip', value: string, confidence: number, more?: PeerSay): Promise<string>;
  /** Changes a peer's settings, as `tollwatch peers set` does. */
  set(peer_id: string, settings: { enabled?: number; republish?: number; trust?: number }): Promise<void>;
}

export interface PeerSay {
  object_id?: string;
  valid_until?: string | null;
  revoked?: number;
  valid_from?: string;
  tlp?: string;
}

export function peerRows(h: Harness): PeerRows {
  const db = () => h.services.database.db;
  return {
    async peer(name, trust, { enabled = 1, republish = 0 } = {}) {
      const peer_id = randomUUID();
      await db()
        .insertInto('peers')
        .values({ peer_id, name, api_root: `https://${name}.example/taxii2/root/`, collections: '[]', auth: 'none', username: null, credential: null, trust, poll_seconds: 300, republish, enabled, created_at: new Date().toISOString() })
        .execute();
      await h.services.peerEvidence.refresh();
      return peer_id;
    },
    async say(peer_id, kind, value, confidence, more = {}) {
      const object_id = more.object_id ?? `indicator--${randomUUID()}`;
      const top = await db().selectFrom('peer_indicators').select((eb) => eb.fn.max('seq').as('seq')).executeTakeFirst();
      const row = {
        peer_id,
        object_id,
        kind,
        value,
        confidence,
        valid_from: more.valid_from ?? '2026-11-20T10:00:00.000Z',
        modified: new Date().toISOString(),
        valid_until: more.valid_until === undefined ? new Date(Date.now() + 86_400_000).toISOString() : more.valid_until,
        revoked: more.revoked ?? 0,
        tlp: more.tlp ?? null,
        seq: Number(top?.seq ?? 0) + 1,
      };
      await db()
        .insertInto('peer_indicators')
        .values(row)
        .onConflict((oc) => oc.columns(['peer_id', 'object_id']).doUpdateSet(row))
        .execute();
      await h.services.peerEvidence.refresh();
      return object_id;
    },
    async set(peer_id, settings) {
      await db().updateTable('peers').set(settings).where('peer_id', '=', peer_id).execute();
      await h.services.peerEvidence.refresh();
    },
  };
}

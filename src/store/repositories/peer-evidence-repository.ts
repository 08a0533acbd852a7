import type { Kysely } from 'kysely';
import type { PeerEvidenceStore, PeerIndicatorRow, PeerRow } from '../../domain/federation/peer-evidence.ts';
import type { Schema } from '../schema.ts';

/** The peers' indicators as every server reads them into memory (migration 030), by `seq`. */
export class SqlPeerEvidenceRepository implements PeerEvidenceStore {
  private readonly db: Kysely<Schema>;

  constructor(db: Kysely<Schema>) {
    this.db = db;
  }

  async peers(): Promise<PeerRow[]> {
    const rows = await this.db.selectFrom('peers').select(['peer_id', 'name', 'trust', 'republish', 'enabled']).execute();
    return rows.map((r) => ({ ...r, trust: Number(r.trust), republish: Number(r.republish), enabled: Number(r.enabled) }));
  }

  async indicatorsAfter(seq: number, limit: number): Promise<PeerIndicatorRow[]> {
    const rows = await this.db.selectFrom('peer_indicators').selectAll().where('seq', '>', seq).orderBy('seq').limit(limit).execute();
    return rows.map((r) => ({ ...r, confidence: Number(r.confidence), revoked: Number(r.revoked) }));
  }
}

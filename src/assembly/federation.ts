import { TargetGuard } from '../delivery/target-guard.ts';
import { TaxiiClient, type TaxiiClientSettings } from '../delivery/taxii-client.ts';
import { PeerPoller, type PollerSettings } from '../domain/federation/peer-poller.ts';
import { Peers } from '../domain/federation/peers.ts';
import { SqlPeersRepository } from '../store/repositories/peers-repository.ts';
import type { Foundation } from './foundation.ts';

/** The poller's and the client's bounds (docs/federation.md, "Limits"); tests shorten them. */
export type FederationSettings = PollerSettings & TaxiiClientSettings;

/** Federation's ingestion side (docs/federation.md): the operator's peers, and the poller that reads them. */
export interface FederationAssembly {
  peers: Peers;
  /**
   * Reads the peers' collections into `peer_indicators`; every serving process runs it (started
   * on listen, app.ts; stopped on close), and a lease per peer lets one instance poll a peer at a time.
   */
  peerPoller: PeerPoller;
}

export function assembleFederation(base: Foundation, settings: Partial<FederationSettings> = {}): FederationAssembly {
  const { database, audit, log } = base;
  const records = new SqlPeersRepository(database.db, database.caps, base.sealer);
  // Peers are the operator's choice alone (no account can add one), so a peer on the operator's
  // own network is allowed; the guard still pins the addresses it resolved, against rebinding.
  const reader = new TaxiiClient(new TargetGuard(true), settings);
  const peerPoller = new PeerPoller(records, reader, settings, { onError: (err) => log?.warn({ err }, 'polling a peer failed on our side') });
  return { peers: new Peers(records, reader, peerPoller, audit), peerPoller };
}

import { Allowlists } from '../domain/allowlists/allowlists.ts';
import { DnsZones } from '../domain/dns/dns-zones.ts';
import { FeedService } from '../domain/intelligence/feed-service.ts';
import type { LookupObserver } from '../domain/lookups/lookup-service.ts';
import { LookupService } from '../domain/lookups/lookup-service.ts';
import { RangeLookupService } from '../domain/lookups/range-lookup.ts';
import { SqlAllowlistRepository } from '../store/repositories/allowlists-repository.ts';
import { SqlFeedsRepository } from '../store/repositories/feeds-repository.ts';
import { SqlLookupsRepository } from '../store/repositories/lookups-repository.ts';
import { PeerEvidence } from '../domain/federation/peer-evidence.ts';
import { SqlPeerEvidenceRepository } from '../store/repositories/peer-evidence-repository.ts';
import type { AggregatePipeline } from './aggregates.ts';
import type { Foundation } from './foundation.ts';
import type { ReportedValues } from '../domain/intelligence/value-reports.ts';

/**
 * What `assembleLookups` builds, one of the groups `Services` is made of: what callers ask of the
 * aggregates (number and address lookups, range lookups, feeds). `LookupService`, the domain's
 * service of single and bulk lookups, is one member.
 */
export interface LookupsAssembly {
  lookups: LookupService;
  /** Range lookups by a hash prefix (docs/api.md §13). */
  rangeLookups: RangeLookupService;
  /** Blocklist feeds (docs/api.md §14). */
  feeds: FeedService;
  /** The DNS zones' answers, from the shared data set (docs/dns.md). */
  dnsZones: DnsZones;
  /** The accounts' and the operator's allowlists (docs/api.md §16), kept in memory for the lookups, feeds, zones and TAXII. */
  allowlists: Allowlists;
  /** What the federation's peers said (docs/federation.md), kept in memory for the lookups; refreshed by serving processes. */
  peerEvidence: PeerEvidence;
}

/** `observer` hears of every match: the `lookup.matched` alerts; `reports` are the operator's accepted false-positive reports, which every score here applies. */
export async function assembleLookups(base: Foundation, aggregates: AggregatePipeline, observer: LookupObserver, reports?: ReportedValues): Promise<LookupsAssembly> {
  const { reads, config, database } = base;
  const { aggregateFolder, lookupCache, knownKeys, replicaReads } = aggregates;
  const lookupsRepo = new SqlLookupsRepository(reads.db, reads.statements);
  // With a replica, an account whose own events the replica may lack reads the primary (domain/lookups/replica-reads.ts).
  const primary = replicaReads && { repo: new SqlLookupsRepository(database.db, database.statements), readsPrimary: (accountId: string) => replicaReads.readsPrimary(accountId) };
  // Read from the store itself, never a replica: a change must count from the next answer. Every
  // change is announced, and every instance forgets its lists when told of one.
  const allowlists = new Allowlists(new SqlAllowlistRepository(database.db, database.statements), {
    audit: base.audit,
    changed: () => base.announce(),
    externalChangeCounter: database.externalChangeCounter,
  });
  await base.onAccessChange(() => allowlists.forget());
  // Read from the store itself: the poller writes there, and a replica may lag behind it.
  const peerEvidence = new PeerEvidence(new SqlPeerEvidenceRepository(database.db), (err) => base.log?.warn({ err }, 'reading the peers’ indicators failed; retrying at the next turn'));
  await peerEvidence.refresh();
  return {
    allowlists,
    peerEvidence,
    // A lookup by an account waits for the fold of its own acknowledged events (ownWrites).
    lookups: new LookupService(lookupsRepo, { ownWrites: aggregateFolder, observer, scoring: config.scoring, cache: lookupCache, knownKeys, reports, allowlists, peers: peerEvidence, ...(primary ? { primary } : {}) }),
    rangeLookups: new RangeLookupService(lookupsRepo, aggregateFolder, config.scoring, undefined, reports),
    // No account and no barrier: a DNS question has no caller, so it reads the shared data set only.
    dnsZones: new DnsZones(config.dns.zones, { repo: lookupsRepo, cache: lookupCache, knownKeys, scoring: config.scoring, allowlists, peers: peerEvidence, ...(reports ? { reports } : {}) }),
    feeds: new FeedService(new SqlFeedsRepository(reads.db, lookupsRepo), aggregateFolder, config.scoring, undefined, await base.serverSecrets.read('feed-tag'), reports, allowlists, peerEvidence),
  };
}

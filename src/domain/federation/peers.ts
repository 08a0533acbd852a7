import { randomUUID } from 'node:crypto';
import type { AuditTrail } from '../accounts/audit.ts';
import { ServiceError } from '../errors.ts';
import type { PeerPoller, PollOutcome } from './peer-poller.ts';
import type { PeerRecords, PeerView } from './peer-records.ts';
import { MAX_COLLECTIONS, validatePeerChanges, validatePeerSettings, type PeerInput } from './peer-settings.ts';
import { PeerRequestFailed, TAXII_MEDIA_TYPE, type PeerCredentials, type TaxiiReader } from './taxii-reader.ts';

/** A collection a peer lists (TAXII 2.1 §5.2), as the operator is shown it. */
export interface FoundCollection {
  id: string;
  title: string;
  alias?: string;
  canRead: boolean;
}

/** What a peer answered when it was added: the API root's title and its collections. */
export interface PeerProbe {
  apiRoot: string;
  title: string;
  collections: FoundCollection[];
}

/** Collections listed at most: a peer's list is shown to the operator, not kept whole. */
const MAX_LISTED = 100;

/**
 * The operator's peers (docs/federation.md): other TAXII 2.1 servers whose indicators this one
 * reads. Adding one first asks it, as a TAXII 2.1 client, for its API root and its collections;
 * one that does not answer as TAXII 2.1 is refused with the reason.
 */
export class Peers {
  private readonly records: PeerRecords;
  private readonly reader: TaxiiReader;
  private readonly poller: PeerPoller;
  private readonly audit: AuditTrail;

  constructor(records: PeerRecords, reader: TaxiiReader, poller: PeerPoller, audit: AuditTrail) {
    this.records = records;
    this.reader = reader;
    this.poller = poller;
    this.audit = audit;
  }

  /** Checks the settings, asks the peer, and keeps it: the peer, and what it answered. */
  async add(input: PeerInput, actor: string): Promise<{ peer: PeerView; found: PeerProbe }> {
    const settings = validatePeerSettings(input);
    if (await this.records.find(settings.name)) throw new ServiceError('validation_failed', `a peer named ${settings.name} exists already`, [{ field: 'name', message: 'is taken' }]);
    const found = await this.probe(settings.apiRoot, settings);
    const readable = found.collections.filter((c) => c.canRead);
    let collections: string[];
    if (settings.collections.length === 0) {
      if (readable.length === 0) throw refusal(`${found.apiRoot} lists no collection these credentials can read`);
      if (readable.length > MAX_COLLECTIONS) throw refusal(`${found.apiRoot} lists ${readable.length} readable collections, more than the ${MAX_COLLECTIONS} a peer may have read: choose some`);
      collections = readable.map((c) => c.id);
    } else {
      collections = settings.collections.map((wanted) => {
        const match = found.collections.find((c) => c.id === wanted || c.alias === wanted);
        if (!match) throw refusal(`${found.apiRoot} lists no collection ${wanted} (it lists: ${found.collections.map((c) => c.alias ?? c.id).join(', ') || 'none'})`);
        if (!match.canRead) throw refusal(`the collection ${wanted} of ${found.apiRoot} cannot be read with these credentials (can_read is false)`);
        return match.id;
      });
    }
    const peer = await this.records.add(randomUUID(), { ...settings, apiRoot: found.apiRoot, collections: [...new Set(collections)] }, new Date().toISOString());
    await this.audit.record({ action: 'peer.added', actor, detail: { peer_id: peer.id, name: peer.name, api_root: peer.apiRoot, collections: peer.collections, trust: peer.trust } });
    return { peer, found };
  }

  list(): Promise<PeerView[]> {
    return this.records.list();
  }

  async show(idOrName: string): Promise<PeerView> {
    const peer = await this.records.find(idOrName);
    if (!peer) throw new ServiceError('not_found', `no peer ${idOrName}`);
    return peer;
  }

  /** Removes a peer: what it said is marked revoked (so every server drops it), then it is gone. */
  async remove(idOrName: string, actor: string): Promise<{ peer: PeerView; revoked: number }> {
    const peer = await this.show(idOrName);
    const revoked = await this.records.remove(peer.id);
    await this.audit.record({ action: 'peer.removed', actor, detail: { peer_id: peer.id, name: peer.name, revoked } });
    return { peer, revoked };
  }

  async setEnabled(idOrName: string, enabled: boolean, actor: string): Promise<PeerView> {
    const peer = await this.show(idOrName);
    await this.records.setEnabled(peer.id, enabled);
    await this.audit.record({ action: enabled ? 'peer.enabled' : 'peer.disabled', actor, detail: { peer_id: peer.id, name: peer.name } });
    return this.show(peer.id);
  }

  /** Changes a peer's trust, poll interval or republish setting; what it said is kept. */
  async change(idOrName: string, input: Pick<PeerInput, 'trust' | 'pollSeconds' | 'republish'>, actor: string): Promise<PeerView> {
    const changes = validatePeerChanges(input);
    const peer = await this.show(idOrName);
    await this.records.change(peer.id, changes);
    await this.audit.record({ action: 'peer.changed', actor, detail: { peer_id: peer.id, name: peer.name, ...changes } });
    return this.show(peer.id);
  }

  /** Polls a peer now in this process (the CLI); refused while another instance is polling it. */
  async pollNow(idOrName: string): Promise<{ outcome: PollOutcome; peer: PeerView }> {
    const peer = await this.show(idOrName);
    const outcome = await this.poller.pollNow(peer.id);
    if (!outcome) throw new ServiceError('unavailable', `another instance is polling ${peer.name} now; its status shows the outcome when it ends`);
    return { outcome, peer: await this.show(peer.id) };
  }

  /** Asks the server's poller to poll a peer at its next turn (the dashboard). */
  async pollSoon(idOrName: string): Promise<PeerView> {
    const peer = await this.show(idOrName);
    await this.records.pollSoon(peer.id, new Date().toISOString());
    return this.show(peer.id);
  }

  /**
   * Asks a URL for its API root (TAXII 2.1 §4.2), or its discovery resource (§4.1), whose
   * default API root (else its first) is then asked; then the API root's collections (§5.1).
   */
  async probe(url: string, credentials: PeerCredentials): Promise<PeerProbe> {
    let apiRoot = url;
    let root = await this.ask(apiRoot, credentials);
    if (Array.isArray(root.api_roots)) {
      const chosen = typeof root.default === 'string' ? root.default : root.api_roots.find((r): r is string => typeof r === 'string');
      if (!chosen) throw refusal(`${url} is a TAXII discovery resource naming no API root`);
      let resolved: URL;
      try {
        resolved = new URL(chosen, url);
      } catch {
        throw refusal(`${url} is a TAXII discovery resource whose API root is not a URL`);
      }
      if (resolved.protocol !== 'https:' && resolved.protocol !== 'http:') throw refusal(`${url} names an API root that is not an http(s) URL`);
      apiRoot = resolved.href.endsWith('/') ? resolved.href : `${resolved.href}/`;
      root = await this.ask(apiRoot, credentials);
    }
    if (typeof root.title !== 'string') throw refusal(`${apiRoot} answered without the title an API root has: it is not a TAXII 2.1 API root`);
    const versions = root.versions;
    if (!Array.isArray(versions) || !versions.some((v) => typeof v === 'string' && v.replace(/\s/g, '').toLowerCase() === TAXII_MEDIA_TYPE)) {
      throw refusal(`${apiRoot} does not list ${TAXII_MEDIA_TYPE} among its versions`);
    }
    const listing = await this.ask(new URL('collections/', apiRoot).href, credentials);
    const listed = listing.collections ?? [];
    if (!Array.isArray(listed)) throw refusal(`${apiRoot}collections/ answered collections that are not a list`);
    const collections: FoundCollection[] = [];
    for (const c of listed.slice(0, MAX_LISTED)) {
      if (typeof c !== 'object' || c === null || typeof (c as Record<string, unknown>).id !== 'string') continue;
      const { id, title, alias, can_read: canRead } = c as Record<string, unknown>;
      collections.push({ id: String(id).slice(0, 128), title: typeof title === 'string' ? title.slice(0, 200) : '', ...(typeof alias === 'string' ? { alias: alias.slice(0, 128) } : {}), canRead: canRead === true });
    }
    return { apiRoot, title: root.title.slice(0, 200), collections };
  }

  private async ask(url: string, credentials: PeerCredentials): Promise<Record<string, unknown>> {
    try {
      const { body } = await this.reader.get(url, credentials);
      if (typeof body !== 'object' || body === null || Array.isArray(body)) throw refusal(`${url} answered JSON that is not an object: it is not a TAXII 2.1 resource`);
      return body as Record<string, unknown>;
    } catch (err) {
      if (err instanceof PeerRequestFailed) throw refusal(`${url}: ${err.message}`);
      throw err;
    }
  }
}

/** The peer does not answer as a TAXII 2.1 server should: the operator is told why. */
function refusal(why: string): ServiceError {
  return new ServiceError('validation_failed', `not added: ${why}`, [{ field: 'api_root', message: why }]);
}

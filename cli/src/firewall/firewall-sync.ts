import { createHash } from 'node:crypto';
import { isIP } from 'node:net';
import type { CallOptions, IpAddressFeed, Tollwatch } from '../../../sdk/src/index.ts';
import type { Allowlist } from './allowlist.ts';
import { applyScript, setScript, setsExist, type SetElement, type SetTarget } from './firewall-sets.ts';
import { loadState, saveState, type SyncState } from './sync-state.ts';

/** One sync of the address feed into a target's sets. */
export interface SyncRequest {
  client: Tollwatch;
  target: SetTarget;
  /** The feed's threshold; the server's default (50) when absent. */
  minScore: number | undefined;
  allowlist: Allowlist;
  /** Make the script and return it, applying and saving nothing. */
  dryRun: boolean;
  statePath: string;
  /** What identifies the server and client asked, for the state's key. */
  source: { url: string; clientId: string; audience?: string | undefined };
  bounds: CallOptions;
  now?: () => number;
}

export type SyncOutcome =
  | { outcome: 'applied'; ipv4: number; ipv6: number; allowed_out: number; etag: string | null; apply_ms: number }
  | { outcome: 'unchanged'; etag: string; applied_at: string; ipv4: number; ipv6: number }
  | { outcome: 'dry-run'; script: string; ipv4: number; ipv6: number; allowed_out: number };

/**
 * Fetches the address feed and makes the sets hold exactly its addresses, less the allowlist's,
 * each timing out at its `valid_until` (docs/clients.md, "Blocklists in the firewall"). The last
 * ETag applied is sent as If-None-Match, and a 304 changes nothing; it is not sent when the sets
 * are gone (a reloaded firewall) or anything else about the sync changed. Anything that fails
 * (the server, the feed, the tool) throws before the sets are touched or, for the tool, leaves
 * them as they were: nft applies its script as one transaction, and ipset swaps only full sets.
 */
export async function syncFirewall(request: SyncRequest): Promise<SyncOutcome> {
  const { target, allowlist, statePath } = request;
  const now = request.now ?? Date.now;
  const key = stateKey(request);
  const state = request.dryRun ? undefined : loadState(statePath);
  const held = state?.key === key && (await setsExist(target)) ? state : undefined;
  const poll = await request.client.ipAddressFeed({ ...(request.minScore === undefined ? {} : { minScore: request.minScore }), ...(held ? { ifNoneMatch: held.etag } : {}) }, request.bounds);
  if (poll.notModified) {
    if (!held) throw new Error('the server answered 304 Not Modified to a request that named no ETag');
    return { outcome: 'unchanged', etag: held.etag, applied_at: held.applied_at, ipv4: held.ipv4, ipv6: held.ipv6 };
  }
  const { v4, v6, allowedOut } = elementsOf(poll.feed, allowlist, now());
  const script = setScript(target, { v4, v6 });
  if (request.dryRun) return { outcome: 'dry-run', script, ipv4: v4.length, ipv6: v6.length, allowed_out: allowedOut };
  const started = performance.now();
  await applyScript(target.backend, script);
  const applyMs = Math.round(performance.now() - started);
  if (poll.etag) {
    const saved: SyncState = { key, etag: poll.etag, applied_at: new Date(now()).toISOString(), scored_at: poll.feed.scored_at, ipv4: v4.length, ipv6: v6.length, allowed_out: allowedOut };
    saveState(statePath, saved);
  }
  return { outcome: 'applied', ipv4: v4.length, ipv6: v6.length, allowed_out: allowedOut, etag: poll.etag, apply_ms: applyMs };
}

/**
 * The feed's addresses as set elements, by version, less the allowed ones. Every value is checked
 * to be an address before it goes into a script run as root: anything else fails the sync.
 */
function elementsOf(feed: IpAddressFeed, allowlist: Allowlist, now: number): { v4: SetElement[]; v6: SetElement[]; allowedOut: number } {
  const v4: SetElement[] = [];
  const v6: SetElement[] = [];
  let allowedOut = 0;
  for (const entry of feed.entries) {
    const address = entry.ip_address;
    const version = isIP(address);
    if (version === 0) throw new Error(`the feed holds something that is not an address: ${JSON.stringify(address).slice(0, 80)}`);
    if (allowlist.allows(address)) {
      allowedOut += 1;
      continue;
    }
    (version === 4 ? v4 : v6).push({ address, timeoutSeconds: timeoutOf(entry.valid_until, now) });
  }
  return { v4, v6, allowedOut };
}

/** Whole seconds from now to `valid_until` (at least one), or none when the entry has no end. */
function timeoutOf(validUntil: string | undefined, now: number): number | undefined {
  if (validUntil === undefined) return undefined;
  const until = Date.parse(validUntil);
  if (Number.isNaN(until)) throw new Error(`the feed holds a valid_until that is not an instant: ${JSON.stringify(validUntil).slice(0, 80)}`);
  return Math.max(1, Math.ceil((until - now) / 1000));
}

/** What makes an applied feed this sync's: the server and client, the threshold, the allowlist and the target. */
function stateKey({ source, minScore, allowlist, target }: SyncRequest): string {
  return createHash('sha256')
    .update(JSON.stringify([source.url, source.clientId, source.audience ?? '', minScore ?? null, allowlist.digest, target]))
    .digest('hex')
    .slice(0, 32);
}

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { writePrivateFile } from '../private-file.ts';
import { configDirectory } from '../settings.ts';
import type { SetTarget } from './firewall-sets.ts';

/** What the last sync applied to a target, kept between runs. */
export interface SyncState {
  /** What the sync asked and applied it with (server, client, threshold, allowlist, target): another key, another feed. */
  key: string;
  /** The ETag of the feed applied: sent as If-None-Match while `key` is the same. */
  etag: string;
  applied_at: string;
  /** The feed's `scored_at`. */
  scored_at: string;
  ipv4: number;
  ipv6: number;
  /** Addresses of the feed that --allow kept out. */
  allowed_out: number;
}

/** The state file of a target, in the config directory: one per backend, table and sets. */
export function stateFile(env: NodeJS.ProcessEnv, target: SetTarget): string {
  const where = target.backend === 'nft' ? `nft-${target.family}-${target.table}-${target.v4}-${target.v6}` : `ipset-${target.v4}-${target.v6}`;
  return join(configDirectory(env), 'firewall', `${where}.json`);
}

/** The state last saved at `path`, or undefined when there is none or it cannot be read (the feed is then applied in full). */
export function loadState(path: string): SyncState | undefined {
  try {
    const saved = JSON.parse(readFileSync(path, 'utf8')) as Partial<SyncState>;
    return typeof saved.key === 'string' && typeof saved.etag === 'string' ? (saved as SyncState) : undefined;
  } catch {
    return undefined;
  }
}

/** Saves the state whole, readable by the owner only, renamed into place so a reader never sees half of it. */
export function saveState(path: string, state: SyncState): void {
  writePrivateFile(path, `${JSON.stringify(state, null, 2)}\n`);
}

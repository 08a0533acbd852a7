import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { SavedToken, TokenCache } from '../../sdk/src/index.ts';
import { writePrivateFile } from './private-file.ts';
import { configDirectory, type ClientSettings } from './settings.ts';

/**
 * The SDK's token cache on a file, so that one token serves every run of the CLI until it nearly
 * expires: a lookup from a shell costs one request, not a token request and a lookup. One file
 * per server, client and audience (a hash names it), readable by the owner only, written whole
 * and renamed into place so that runs side by side never read half of one.
 */
export function tokenFile(env: NodeJS.ProcessEnv, settings: ClientSettings): TokenCache {
  const directory = join(configDirectory(env), 'tokens');
  // The secret is in the key: after `setup` with a new secret, the old token is not used.
  const key = createHash('sha256').update(JSON.stringify([settings.url, settings.clientId, settings.clientSecret, settings.audience ?? ''])).digest('hex').slice(0, 32);
  const path = join(directory, `${key}.json`);
  return {
    load() {
      const saved = JSON.parse(readFileSync(path, 'utf8')) as { access_token?: unknown; expires_at?: unknown };
      if (typeof saved.access_token !== 'string' || typeof saved.expires_at !== 'number') return undefined;
      return { accessToken: saved.access_token, expiresAt: saved.expires_at };
    },
    save(token: SavedToken) {
      writePrivateFile(path, JSON.stringify({ access_token: token.accessToken, expires_at: token.expiresAt }));
    },
  };
}

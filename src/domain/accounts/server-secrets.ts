import { CURSOR_KEY_BYTES } from '../events/event-cursor.ts';

/** The key a feed's ETag is made with (docs/api.md §14). */
export const FEED_TAG_KEY_BYTES = 32;

/** Names of the secrets the server keeps in its store. */
export type ServerSecretName = 'cursor' | 'feed-tag';

/** How many random bytes each secret is made of. */
export const SERVER_SECRET_BYTES: Record<ServerSecretName, number> = { cursor: CURSOR_KEY_BYTES, 'feed-tag': FEED_TAG_KEY_BYTES };

/**
 * Secrets every instance of the server shares, made once when the store was created (so they
 * survive restarts and agree across instances).
 */
export interface ServerSecrets {
  /** The secret's bytes, made (once, for every instance) if the store has none by that name. */
  read(name: ServerSecretName): Promise<Uint8Array>;
}

/** Names of the secrets the server keeps in its store. */
export type ServerSecretName = 'cursor';

/**
 * Secrets every instance of the server shares, made once when the store was created (so they
 * survive restarts and agree across instances).
 */
export interface ServerSecrets {
  /** The secret's bytes; fails if the store has none by that name. */
  read(name: ServerSecretName): Promise<Uint8Array>;
}

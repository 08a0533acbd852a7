/**
 * The token signer's keys as the store keeps them, and the repository oauth/signing-keys.ts
 * reads and rotates them through (store/repositories/signing-keys-repository.ts implements it).
 */

/** One stored key. Its private half is sealed with the key secret (key-sealing.ts, `signingKeyContext`). */
export interface SigningKeyRecord {
  kid: string;
  alg: string;
  /** The private JWK as JSON, sealed. */
  private_jwk: string;
  /** The public JWK as JSON. */
  public_jwk: string;
  created_at: string;
  /** Whether it signs new tokens: one key at most, which the store holds unique. */
  current: boolean;
  /** When it stops verifying and leaves the JWKS (ISO 8601); null while it is current. */
  retires_at: string | null;
}

/** A rotation refused because another was committed at the same moment: never two keys current. */
export class ConcurrentRotationError extends Error {
  override readonly name = 'ConcurrentRotationError';
  constructor() {
    super('another key rotation was committed at the same moment; see `tollwatch keys list` before rotating again');
  }
}

export interface SigningKeyRepository {
  /** Every key not retired at `at` (ISO 8601), oldest first. */
  live(at: string): Promise<SigningKeyRecord[]>;
  /** Every key, retired or not, oldest first, without its halves. */
  list(): Promise<Array<Pick<SigningKeyRecord, 'kid' | 'created_at' | 'current' | 'retires_at'>>>;
  /** Stores `key` as the current one unless some key is current already (instances starting together: one wins). */
  addFirst(key: SigningKeyRecord): Promise<void>;
  /**
   * In one transaction: removes the keys retired by `key.created_at`, retires the current key at
   * `retiresAt`, and makes `key` current. Throws ConcurrentRotationError, changing nothing, when
   * another rotation made a key current meanwhile.
   */
  replaceCurrent(key: SigningKeyRecord, retiresAt: string): Promise<{ previous: string | undefined; removed: string[] }>;
}

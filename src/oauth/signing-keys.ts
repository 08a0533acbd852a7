import { randomUUID } from 'node:crypto';
import { exportJWK, generateKeyPair, importJWK, type CryptoKey, type JWK } from 'jose';
import type { Kysely } from 'kysely';
import type { Schema } from '../store/schema.ts';

const ALG = 'ES256';

interface LoadedKey {
  kid: string;
  publicJwk: JWK;
  publicKey: CryptoKey;
  privateKey: CryptoKey;
}

/**
 * The token signer's keys. Kept in the store so tokens survive restarts and every instance
 * shares them; the newest key signs, every key verifies and is published in the JWKS.
 */
export class SigningKeys {
  private readonly db: Kysely<Schema>;
  private keys = new Map<string, LoadedKey>();
  private signing: LoadedKey | undefined;

  private constructor(db: Kysely<Schema>) {
    this.db = db;
  }

  /** Loads the stored keys, creating the first one on a new store. */
  static async open(db: Kysely<Schema>): Promise<SigningKeys> {
    const keys = new SigningKeys(db);
    await keys.reload();
    if (!keys.signing) {
      await keys.create();
      await keys.reload();
    }
    return keys;
  }

  /** The key new tokens are signed with. */
  current(): { kid: string; privateKey: CryptoKey } {
    if (!this.signing) throw new Error('no signing key loaded');
    return this.signing;
  }

  /** The public half of every key, as a JWK Set (RFC 7517). */
  jwks(): { keys: JWK[] } {
    return { keys: [...this.keys.values()].map((k) => k.publicJwk) };
  }

  /**
   * The verification key for a `kid`. An unknown kid may be a key another instance created
   * since we loaded, so the store is read once more before giving up.
   */
  async verificationKey(kid: string | undefined): Promise<CryptoKey | undefined> {
    if (kid === undefined) return undefined;
    const known = this.keys.get(kid);
    if (known) return known.publicKey;
    if (!this.lastMissReload || Date.now() - this.lastMissReload > 1000) {
      this.lastMissReload = Date.now();
      await this.reload();
    }
    return this.keys.get(kid)?.publicKey;
  }

  private lastMissReload = 0;

  private async create(): Promise<void> {
    const { privateKey, publicKey } = await generateKeyPair(ALG, { extractable: true });
    const kid = randomUUID();
    const publicJwk = { ...(await exportJWK(publicKey)), kid, alg: ALG, use: 'sig' };
    const privateJwk = { ...(await exportJWK(privateKey)), kid, alg: ALG };
    await this.db
      .insertInto('signing_keys')
      .values({
        kid,
        alg: ALG,
        private_jwk: JSON.stringify(privateJwk),
        public_jwk: JSON.stringify(publicJwk),
        created_at: new Date().toISOString(),
      })
      .execute();
  }

  private async reload(): Promise<void> {
    const rows = await this.db.selectFrom('signing_keys').selectAll().orderBy('created_at').orderBy('kid').execute();
    const keys = new Map<string, LoadedKey>();
    for (const row of rows) {
      const publicJwk = JSON.parse(row.public_jwk) as JWK;
      const loaded: LoadedKey = {
        kid: row.kid,
        publicJwk,
        publicKey: (await importJWK(publicJwk, row.alg)) as CryptoKey,
        privateKey: (await importJWK(JSON.parse(row.private_jwk) as JWK, row.alg)) as CryptoKey,
      };
      keys.set(row.kid, loaded);
    }
    this.keys = keys;
    // The newest key signs; rows are ordered oldest first.
    this.signing = [...keys.values()].at(-1);
  }
}

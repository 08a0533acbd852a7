import { randomUUID } from 'node:crypto';
import { exportJWK, generateKeyPair, importJWK, type CryptoKey, type JWK } from 'jose';
import type { Kysely } from 'kysely';
import { KeySealer, WrongKeySecretError } from '../domain/key-sealing.ts';
import { signingKeyContext } from '../store/keys-at-rest.ts';
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
 * shares them; the newest key signs, every key verifies and is published in the JWKS. Private
 * keys are stored sealed with the key secret (src/store/keys-at-rest.ts).
 */
export class SigningKeys {
  private readonly db: Kysely<Schema>;
  private readonly sealer: KeySealer;
  private keys = new Map<string, LoadedKey>();
  private signing: LoadedKey | undefined;

  private constructor(db: Kysely<Schema>, sealer: KeySealer) {
    this.db = db;
    this.sealer = sealer;
  }

  /**
   * Loads the stored keys, creating the first one on a new store. A key that does not open
   * with the key secret fails here: never a new key beside ones this server cannot read.
   */
  static async open(db: Kysely<Schema>, sealer: KeySealer): Promise<SigningKeys> {
    const keys = new SigningKeys(db, sealer);
    await keys.reload(true);
    if (!keys.signing) {
      await keys.create();
      await keys.reload(true);
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
      await this.reload(false);
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
        private_jwk: this.sealer.seal(JSON.stringify(privateJwk), signingKeyContext(kid)),
        public_jwk: JSON.stringify(publicJwk),
        created_at: new Date().toISOString(),
      })
      .execute();
  }

  /**
   * Reads every key. `strict` (at start) fails on a key that does not open; later, a key some
   * misconfigured instance sealed with another secret is left out (its tokens are refused as
   * signed by an unknown key) rather than failing every request that asks for keys.
   */
  private async reload(strict: boolean): Promise<void> {
    const rows = await this.db.selectFrom('signing_keys').selectAll().orderBy('created_at').orderBy('kid').execute();
    const keys = new Map<string, LoadedKey>();
    for (const row of rows) {
      let privateJwk: string;
      try {
        // A plain key is one an older version wrote during a rolling upgrade; sealed at next start.
        privateJwk = this.sealer.read(row.private_jwk, signingKeyContext(row.kid));
      } catch (err) {
        if (strict || !(err instanceof WrongKeySecretError)) throw err;
        continue;
      }
      const publicJwk = JSON.parse(row.public_jwk) as JWK;
      const loaded: LoadedKey = {
        kid: row.kid,
        publicJwk,
        publicKey: (await importJWK(publicJwk, row.alg)) as CryptoKey,
        privateKey: (await importJWK(JSON.parse(privateJwk) as JWK, row.alg)) as CryptoKey,
      };
      keys.set(row.kid, loaded);
    }
    this.keys = keys;
    // The newest key signs; rows are ordered oldest first.
    this.signing = [...keys.values()].at(-1);
  }
}

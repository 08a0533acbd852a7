import { randomUUID } from 'node:crypto';
import { exportJWK, generateKeyPair, importJWK, type CryptoKey, type JWK } from 'jose';
import { NO_AUDIT, type AuditTrail } from '../domain/accounts/audit.ts';
import { KeySealer, WrongKeySecretError } from '../domain/accounts/key-sealing.ts';
import { signingKeyContext } from '../domain/accounts/key-sealing.ts';
import type { SigningKeyRecord, SigningKeyRepository } from '../domain/signing-key-records.ts';
import { MAX_ISSUED_AT_SKEW_SECONDS, MAX_TOKEN_LIFETIME_SECONDS } from './token-lifetime.ts';

const ALG = 'ES256';

/**
 * How long a process signs with the key it loaded before it reads the store's keys again: the
 * bound on how late it picks up a rotation made elsewhere when no notice reaches it. A minute
 * costs one small read a minute, and signing with the old key meanwhile harms nothing (it
 * verifies for a month yet).
 */
export const KEYS_RELOAD_MS = 60_000;

/**
 * How long a key verifies once a rotation replaced it: the longest lifetime a token may claim
 * (31 days, whatever `TOLLWATCH_TOKEN_TTL` was), plus the reload bound (a process may sign with
 * it that long after the rotation), plus the `iat` skew bound for clocks that disagree. So the
 * last token it signed has expired before it retires.
 */
export const OLD_KEY_LIFETIME_MS = MAX_TOKEN_LIFETIME_SECONDS * 1000 + KEYS_RELOAD_MS + MAX_ISSUED_AT_SKEW_SECONDS * 1000;

/** An unknown kid reads the store again at most this often: a flood of forged kids is one read a second. */
const MISS_RELOAD_MS = 1000;

/** After a reload failed (the store away), when the next one is tried. */
const FAILED_RELOAD_RETRY_MS = 1000;

interface LoadedKey {
  kid: string;
  publicJwk: JWK;
  publicKey: CryptoKey;
  privateKey: CryptoKey;
  /** When it stops verifying (ms since the epoch); undefined while it is current. */
  retiresAt: number | undefined;
}

/** What a rotation did. */
export interface Rotation {
  /** The new key, which signs new tokens from now on. */
  kid: string;
  /** The key it replaced, and when that one retires; undefined on a store that had none. */
  previous: { kid: string; retires_at: string } | undefined;
  /** Keys already past their retirement, removed from the store by this rotation. */
  removed: string[];
}

export interface SigningKeysOptions {
  /** How long loaded keys are used before the store is read again; KEYS_RELOAD_MS unless a test says otherwise. */
  reloadMs?: number;
  /** Called after a rotation, to tell other instances (they reload at once). */
  onRotated?: () => void;
  /** Where rotations are recorded. */
  audit?: AuditTrail;
}

/**
 * The token signer's keys. Kept in the store so tokens survive restarts and every instance
 * shares them; the one key marked current signs, every key not yet retired verifies and is
 * published in the JWKS. Private keys are stored sealed with the key secret
 * (src/store/maintenance/keys-at-rest.ts).
 */
export class SigningKeys {
  private readonly repo: SigningKeyRepository;
  private readonly sealer: KeySealer;
  private readonly reloadMs: number;
  private readonly onRotated: () => void;
  private readonly audit: AuditTrail;
  private keys = new Map<string, LoadedKey>();
  private signing: LoadedKey | undefined;
  /** When the keys in memory were read (the read's start), for the reload bound. */
  private loadedAt = 0;
  private reloading: Promise<void> | undefined;
  private lastMissReload = 0;

  private constructor(repo: SigningKeyRepository, sealer: KeySealer, options: SigningKeysOptions) {
    this.repo = repo;
    this.sealer = sealer;
    this.reloadMs = options.reloadMs ?? KEYS_RELOAD_MS;
    this.onRotated = options.onRotated ?? (() => {});
    this.audit = options.audit ?? NO_AUDIT;
  }

  /**
   * Loads the stored keys, creating the first one on a new store. A key that does not open
   * with the key secret fails here: never a new key beside ones this server cannot read.
   * Instances starting together on an empty store each try to insert a first key, and the
   * store takes only one as current (migration 009): all of them then load that one.
   */
  static async open(repo: SigningKeyRepository, sealer: KeySealer, options: SigningKeysOptions = {}): Promise<SigningKeys> {
    const keys = new SigningKeys(repo, sealer, options);
    await keys.reload(true);
    if (!keys.signing) {
      await repo.addFirst(await keys.newKey());
      await keys.reload(true);
    }
    if (!keys.signing) throw new Error('no current signing key could be loaded from the store');
    return keys;
  }

  /** The key new tokens are signed with, as last loaded (call `refreshIfStale` first to honour the reload bound). */
  current(): { kid: string; privateKey: CryptoKey } {
    if (!this.signing) throw new Error('no signing key loaded');
    return this.signing;
  }

  /** The public half of every key not yet retired, as a JWK Set (RFC 7517). */
  jwks(): { keys: JWK[] } {
    const now = Date.now();
    return { keys: [...this.keys.values()].filter((k) => verifiesAt(k, now)).map((k) => k.publicJwk) };
  }

  /** Whether a key of this kid is loaded and not retired: a token it signed may still be honoured. */
  verifies(kid: string): boolean {
    const key = this.keys.get(kid);
    return key !== undefined && verifiesAt(key, Date.now());
  }

  /**
   * The verification key for a `kid`, unless that key has retired. An unknown kid may be a key
   * another instance created since we loaded, so the store is read once more before giving up.
   */
  async verificationKey(kid: string | undefined): Promise<CryptoKey | undefined> {
    if (kid === undefined) return undefined;
    if (!this.keys.has(kid) && Date.now() - this.lastMissReload > MISS_RELOAD_MS) {
      this.lastMissReload = Date.now();
      await this.reload(false);
    }
    return this.verifies(kid) ? this.keys.get(kid)!.publicKey : undefined;
  }

  /**
   * Reads the keys again if they were read longer ago than the reload bound, or a notice said
   * they changed. A store that does not answer leaves the loaded keys in use (they are still
   * good to sign and verify with) and is asked again a second later.
   */
  async refreshIfStale(): Promise<void> {
    if (!this.stale) return;
    this.reloading ??= this.reload(false)
      .catch(() => {
        this.loadedAt = Date.now() - this.reloadMs + FAILED_RELOAD_RETRY_MS;
      })
      .finally(() => {
        this.reloading = undefined;
      });
    await this.reloading;
  }

  /** Whether the loaded keys are older than the reload bound, or a notice said they changed. */
  get stale(): boolean {
    return Date.now() - this.loadedAt >= this.reloadMs;
  }

  /** Makes the next `refreshIfStale` read the store: on a notice that keys changed elsewhere. */
  markStale(): void {
    this.loadedAt = 0;
  }

  /** Every stored key, oldest first, as `keys list` shows them. */
  list(): ReturnType<SigningKeyRepository['list']> {
    return this.repo.list();
  }

  /**
   * Makes a new key the one that signs. The key it replaces keeps verifying for
   * `oldKeyLifetimeMs` (OLD_KEY_LIFETIME_MS: until the last token it signed has expired), then
   * leaves the JWKS; keys already past their retirement are removed. One transaction: a
   * rotation made elsewhere at the same moment makes this one fail rather than leave two keys
   * current.
   */
  async rotate(options: { oldKeyLifetimeMs?: number; actor?: string } = {}): Promise<Rotation> {
    const { oldKeyLifetimeMs = OLD_KEY_LIFETIME_MS, actor = 'operator' } = options;
    const key = await this.newKey();
    const retiresAt = new Date(Date.parse(key.created_at) + oldKeyLifetimeMs).toISOString();
    const { previous, removed } = await this.repo.replaceCurrent(key, retiresAt);
    const rotation: Rotation = { kid: key.kid, previous: previous === undefined ? undefined : { kid: previous, retires_at: retiresAt }, removed };
    await this.reload(false);
    this.onRotated();
    await this.audit.record({
      action: 'key.rotated',
      actor,
      detail: { kid: rotation.kid, previous_kid: rotation.previous?.kid ?? null, previous_retires_at: rotation.previous?.retires_at ?? null },
    });
    return rotation;
  }

  /** A new key pair, its private half sealed, marked current. */
  private async newKey(): Promise<SigningKeyRecord> {
    const { privateKey, publicKey } = await generateKeyPair(ALG, { extractable: true });
    const kid = randomUUID();
    const publicJwk = { ...(await exportJWK(publicKey)), kid, alg: ALG, use: 'sig' };
    const privateJwk = { ...(await exportJWK(privateKey)), kid, alg: ALG };
    return {
      kid,
      alg: ALG,
      private_jwk: this.sealer.seal(JSON.stringify(privateJwk), signingKeyContext(kid)),
      public_jwk: JSON.stringify(publicJwk),
      created_at: new Date().toISOString(),
      current: true,
      retires_at: null,
    };
  }

  /**
   * Reads every key not yet retired. `strict` (at start) fails on a key that does not open;
   * later, a key some misconfigured instance sealed with another secret is left out (its
   * tokens are refused as signed by an unknown key) rather than failing every request that
   * asks for keys.
   */
  private async reload(strict: boolean): Promise<void> {
    const startedAt = Date.now();
    const rows = await this.repo.live(new Date(startedAt).toISOString());
    const keys = new Map<string, LoadedKey>();
    let signing: LoadedKey | undefined;
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
        retiresAt: row.retires_at === null ? undefined : Date.parse(row.retires_at),
      };
      keys.set(row.kid, loaded);
      if (row.current) signing = loaded;
    }
    this.keys = keys;
    // No current key readable (removed by hand while we ran): keep signing with the last one.
    this.signing = signing ?? this.signing;
    this.loadedAt = startedAt;
  }
}

function verifiesAt(key: LoadedKey, now: number): boolean {
  return key.retiresAt === undefined || key.retiresAt > now;
}

import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/** Bytes of the key secret that seals keys at rest: AES-256. */
export const KEY_SECRET_BYTES = 32;

/** What every sealed value starts with; base64 and JSON, the plain forms, never hold a colon first. */
const PREFIX = 'sealed:v1:';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** A sealed value that this key secret does not open: the wrong key, or an altered value. */
export class WrongKeySecretError extends Error {
  constructor(context: string) {
    super(`${context} does not open with this key secret`);
    this.name = 'WrongKeySecretError';
  }
}

/**
 * Reads a key secret as `TOLLWATCH_KEY_SECRET` or the key file holds it: 32 bytes, written in
 * base64 (`openssl rand -base64 32`), base64url or hex (`openssl rand -hex 32`).
 */
export function parseKeySecret(text: string): Uint8Array {
  const value = text.trim();
  if (/^[0-9a-f]{64}$/i.test(value)) return Buffer.from(value, 'hex');
  if (/^[A-Za-z0-9+/_-]{43}=?$/.test(value)) {
    const bytes = Buffer.from(value.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
    if (bytes.length === KEY_SECRET_BYTES) return bytes;
  }
  throw new Error(`must be ${KEY_SECRET_BYTES} random bytes in base64 or hex (openssl rand -base64 ${KEY_SECRET_BYTES})`);
}

/** A new random key secret, written as parseKeySecret reads it. */
export function newKeySecret(): string {
  return randomBytes(KEY_SECRET_BYTES).toString('base64');
}

/**
 * Encryption at rest of the keys the store holds (token-signing private keys, the cursor key):
 * AES-256-GCM under the key secret, with a random IV per value and the value's place in the
 * store (`context`, e.g. `signing_keys/<kid>`) as additional authenticated data, so a sealed
 * value moved to another row does not open there.
 *
 * Form: `sealed:v1:` + base64url(12-byte IV ‖ ciphertext ‖ 16-byte tag).
 */
export class KeySealer {
  private readonly key: Uint8Array;

  constructor(key: Uint8Array) {
    if (key.length !== KEY_SECRET_BYTES) throw new Error(`the key secret must be ${KEY_SECRET_BYTES} bytes, not ${key.length}`);
    this.key = key;
  }

  /** Whether a stored value is sealed, rather than plain text written before sealing existed. */
  static isSealed(value: string): boolean {
    return value.startsWith(PREFIX);
  }

  /** Seals a value for one place in the store. */
  seal(plain: string, context: string): string {
    // A random IV per value: a store holds a handful of keys, far below GCM's 2^32 bound.
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(Buffer.from(context, 'utf8'));
    const sealed = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return PREFIX + Buffer.concat([iv, sealed, cipher.getAuthTag()]).toString('base64url');
  }

  /** The plain value of a sealed one; WrongKeySecretError unless sealed with this key for this place. */
  open(value: string, context: string): string {
    if (!KeySealer.isSealed(value)) throw new Error(`${context} is not sealed`);
    const bytes = Buffer.from(value.slice(PREFIX.length), 'base64url');
    if (bytes.length < IV_BYTES + TAG_BYTES) throw new WrongKeySecretError(context);
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.key, bytes.subarray(0, IV_BYTES), { authTagLength: TAG_BYTES });
      decipher.setAAD(Buffer.from(context, 'utf8'));
      decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
      return Buffer.concat([decipher.update(bytes.subarray(IV_BYTES, bytes.length - TAG_BYTES)), decipher.final()]).toString('utf8');
    } catch {
      throw new WrongKeySecretError(context);
    }
  }

  /** The plain value of a stored one, sealed or still plain. */
  read(value: string, context: string): string {
    return KeySealer.isSealed(value) ? this.open(value, context) : value;
  }
}

/** Where a signing key's private half lives, bound into its encryption. */
export const signingKeyContext = (kid: string) => `signing_keys/${kid}`;
/** Where a server secret lives, bound into its encryption. */
export const serverSecretContext = (name: string) => `server_secrets/${name}`;

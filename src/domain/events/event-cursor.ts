import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { EventPosition } from './events.ts';

/** Bytes of the cursor key: AES-256. */
export const CURSOR_KEY_BYTES = 32;

const VERSION = 1;
const IV_BYTES = 12;
const TAG_BYTES = 16;
/** A cursor is about 90 characters; anything much longer was not made here. */
const MAX_CURSOR_CHARS = 256;
const EVENT_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{9}Z$/;

/**
 * Opaque page cursors of own-event queries. A cursor holds the last position of a page, whose
 * `id` is a sequence shared by every account: in clear it would tell one account how many
 * events others submitted between two of its queries. So the position is encrypted with
 * AES-256-GCM under a key every instance shares, with the account id as additional
 * authenticated data: a cursor cannot be read, forged, altered or used by another account.
 *
 * Form: base64url(version ‖ 12-byte random IV ‖ ciphertext of JSON [event_time, id] ‖ 16-byte tag).
 */
export class EventCursors {
  private readonly key: Uint8Array;

  constructor(key: Uint8Array) {
    if (key.length !== CURSOR_KEY_BYTES) throw new Error(`the cursor key must be ${CURSOR_KEY_BYTES} bytes, not ${key.length}`);
    this.key = key;
  }

  /** The cursor of a position, for one account. */
  seal(accountId: string, position: EventPosition): string {
    // A random IV per cursor: equal positions give unrelated cursors, and at one cursor per
    // page, 2^32 cursors (the GCM bound for random IVs) is far beyond any key's working life.
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(associatedData(accountId));
    const sealed = Buffer.concat([cipher.update(JSON.stringify([position.eventTime, position.id]), 'utf8'), cipher.final()]);
    return Buffer.concat([Buffer.of(VERSION), iv, sealed, cipher.getAuthTag()]).toString('base64url');
  }

  /** The position a cursor holds, or undefined unless this service made it for this account. */
  open(accountId: string, cursor: string): EventPosition | undefined {
    // Buffer.from(…, 'base64url') skips characters it does not know; refuse them instead.
    if (cursor.length > MAX_CURSOR_CHARS || !/^[A-Za-z0-9_-]+$/.test(cursor)) return undefined;
    const bytes = Buffer.from(cursor, 'base64url');
    if (bytes.length <= 1 + IV_BYTES + TAG_BYTES || bytes[0] !== VERSION) return undefined;
    let plain: string;
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.key, bytes.subarray(1, 1 + IV_BYTES), { authTagLength: TAG_BYTES });
      decipher.setAAD(associatedData(accountId));
      decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
      plain = Buffer.concat([decipher.update(bytes.subarray(1 + IV_BYTES, bytes.length - TAG_BYTES)), decipher.final()]).toString('utf8');
    } catch {
      // Another key, another account, or altered bytes: the tag does not verify.
      return undefined;
    }
    const value: unknown = JSON.parse(plain);
    if (Array.isArray(value) && value.length === 2 && typeof value[0] === 'string' && EVENT_TIME.test(value[0]) && Number.isSafeInteger(value[1])) {
      return { eventTime: value[0], id: value[1] as number };
    }
    return undefined;
  }
}

/** Binds a cursor to its account and to this format's version. */
function associatedData(accountId: string): Buffer {
  return Buffer.from(`tollwatch events cursor v${VERSION}\u0000${accountId}`, 'utf8');
}

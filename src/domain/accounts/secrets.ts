import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** A new client id: 128 random bits, URL-safe, prefixed so that it is recognisable in logs. */
export function newClientId(): string {
  return `twc_${randomBytes(16).toString('base64url')}`;
}

/** A new client secret: 256 random bits, shown once and stored only as its hash. */
export function newClientSecret(): string {
  return `tws_${randomBytes(32).toString('base64url')}`;
}

/**
 * A new ingest URL secret (docs/api.md §11): 256 random bits, URL-safe, prefixed so that it is
 * recognisable wherever it leaks (a log, a shell history) and can be scrubbed from our own logs.
 */
export function newIngestSecret(): string {
  return `${INGEST_SECRET_PREFIX}${randomBytes(32).toString('base64url')}`;
}

/** What every ingest URL secret starts with. */
export const INGEST_SECRET_PREFIX = 'twi_';

/** What a dashboard invitation's or password reset's token starts with: how logs find it to redact it. */
export const INVITATION_TOKEN_PREFIX = 'twu_';

/** The exact shape of an ingest URL secret: the prefix and 32 bytes in unpadded base64url. */
const INGEST_SECRET = /^twi_[A-Za-z0-9_-]{43}$/;

/** Whether a value could be an ingest URL secret at all; anything else needs no store lookup. */
export function isIngestSecretShape(value: string): boolean {
  return INGEST_SECRET.test(value);
}

/**
 * Hash of a secret as stored. Secrets are 256 random bits, so a fast hash is as strong as a
 * slow one here and keeps the token endpoint well inside a SentryPeer node's 2 s timeout.
 */
export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

/** Compares a presented secret with a stored hash in constant time. */
export function secretMatches(secret: string, storedHash: string): boolean {
  const presented = Buffer.from(hashSecret(secret), 'hex');
  const stored = Buffer.from(storedHash, 'hex');
  return presented.length === stored.length && timingSafeEqual(presented, stored);
}

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

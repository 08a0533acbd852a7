import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { ServiceError } from '../errors.ts';

/**
 * Dashboard passwords, hashed with scrypt. Unlike client secrets (256 random bits, a fast hash
 * is enough: secrets.ts) a password is chosen by a person and must be slow to guess offline.
 * Each hash carries its own salt and parameters, so the parameters can be raised later: a hash
 * made with weaker ones still verifies, and `needsRehash` says when to store a stronger one.
 */

/** Today's parameters: N = 2^15, r = 8, p = 1 (OWASP's scrypt minimum is 2^17 at r 8 p 1 for 2023; 2^15 keeps sign-in under ~100 ms on a small machine). */
export const SCRYPT_PARAMETERS = { N: 2 ** 15, r: 8, p: 1 } as const;
const KEY_BYTES = 32;
const SALT_BYTES = 16;
export const MIN_PASSWORD_LENGTH = 12;
export const MAX_PASSWORD_LENGTH = 1024;

interface HashParts {
  N: number;
  r: number;
  p: number;
  salt: Buffer;
  key: Buffer;
}

/** Refuses a password too short to resist guessing, or too long to hash cheaply. */
export function checkPasswordRules(password: string): void {
  const length = [...password].length;
  if (length < MIN_PASSWORD_LENGTH || length > MAX_PASSWORD_LENGTH || password.includes('\u0000')) {
    throw new ServiceError('validation_failed', `the password must be ${MIN_PASSWORD_LENGTH} to ${MAX_PASSWORD_LENGTH} characters`, [
      { field: 'password', message: `must be ${MIN_PASSWORD_LENGTH} to ${MAX_PASSWORD_LENGTH} characters` },
    ]);
  }
}

/** `scrypt$N$r$p$salt$key`, salt and key in base64url. */
export async function hashPassword(password: string, parameters: { N: number; r: number; p: number } = SCRYPT_PARAMETERS): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const key = await derive(password, salt, parameters);
  return ['scrypt', parameters.N, parameters.r, parameters.p, salt.toString('base64url'), key.toString('base64url')].join('$');
}

/** Whether the password matches the stored hash, compared in constant time. */
export async function passwordMatches(password: string, stored: string): Promise<boolean> {
  const parts = parseHash(stored);
  if (!parts) return false;
  const key = await derive(password, parts.salt, parts);
  return key.length === parts.key.length && timingSafeEqual(key, parts.key);
}

/** Whether a stored hash was made with weaker parameters than today's. */
export function needsRehash(stored: string): boolean {
  const parts = parseHash(stored);
  return !parts || parts.N < SCRYPT_PARAMETERS.N || parts.r < SCRYPT_PARAMETERS.r || parts.p < SCRYPT_PARAMETERS.p;
}

/**
 * A hash of no one's password, checked when an email names no user, so that an unknown email
 * costs as much time as a wrong password and the answer's timing tells nothing.
 */
let decoy: Promise<string> | undefined;
export function decoyHash(): Promise<string> {
  decoy ??= hashPassword(randomBytes(16).toString('hex'));
  return decoy;
}

function parseHash(stored: string): HashParts | undefined {
  const [scheme, n, r, p, salt, key] = stored.split('$');
  if (scheme !== 'scrypt' || !n || !r || !p || !salt || !key) return undefined;
  return { N: Number(n), r: Number(r), p: Number(p), salt: Buffer.from(salt, 'base64url'), key: Buffer.from(key, 'base64url') };
}

function derive(password: string, salt: Buffer, { N, r, p }: { N: number; r: number; p: number }): Promise<Buffer> {
  // scrypt needs 128·N·r bytes; the default ceiling (32 MiB) is exactly that at today's parameters.
  const options: ScryptOptions = { N, r, p, maxmem: 256 * N * r };
  return new Promise((resolve, reject) => scrypt(password.normalize('NFC'), salt, KEY_BYTES, options, (err, key) => (err ? reject(err) : resolve(key))));
}

import { Secret, TOTP } from 'otpauth';

/**
 * Time-based one-time passwords (RFC 6238) as every authenticator app reads them: SHA-1, six
 * digits, 30-second steps, a 160-bit secret. The arithmetic is otpauth's; this module only fixes
 * the parameters and says which time step a code belongs to, so a caller can spend it.
 */

/** How far from the current step a code is still taken: one step each way, for clocks that drift. */
export const TOTP_WINDOW = 1;

/** A new secret, in base32 as apps take it typed in. */
export function newTotpSecret(): string {
  return new Secret({ size: 20 }).base32;
}

/** The otpauth:// URI an app scans: this service as issuer, the user's email as label. */
export function totpUri(secret: string, issuer: string, label: string): string {
  return totpOf(secret, issuer, label).toString();
}

/**
 * The time step of `code` under `secret` at `at`, within the window; undefined for anything
 * else (a wrong code, a code too old, not six digits). Spaces are ignored: apps show `123 456`.
 */
export function stepOfCode(secret: string, code: string, at: Date): number | undefined {
  const token = code.replace(/\s+/g, '');
  if (!/^\d{6}$/.test(token)) return undefined;
  const totp = totpOf(secret);
  const delta = totp.validate({ token, timestamp: at.getTime(), window: TOTP_WINDOW });
  return delta === null ? undefined : totp.counter({ timestamp: at.getTime() }) + delta;
}

/** Whether text looks like an app's code rather than a recovery code. */
export function looksLikeTotpCode(text: string): boolean {
  return /^\d{6}$/.test(text.replace(/\s+/g, ''));
}

function totpOf(secret: string, issuer = 'Tollwatch', label = 'Tollwatch'): TOTP {
  return new TOTP({ issuer, label, secret: Secret.fromBase32(secret), algorithm: 'SHA1', digits: 6, period: 30 });
}

import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * CSRF protection by synchronizer token (docs/dashboard.md, "Security"). The token is derived
 * from a secret only the browser's own cookie holds: the session id once signed in, or before
 * that a random form cookie. A page on another site can neither read the cookie nor the page,
 * so it cannot compute or copy the token; a new session (sign-in) changes it. Derived, not
 * stored: nothing to keep per session, and a CSRF plugin would have added a second
 * cookie or a session plugin for what the session id already gives.
 */

/** The token a form posted with this secret must carry in `_csrf`. */
export function csrfTokenFor(secret: string): string {
  return createHash('sha256').update(`tollwatch-dashboard-csrf:${secret}`, 'utf8').digest('base64url');
}

/** Whether a posted token is the one this secret gives, compared in constant time. */
export function csrfTokenMatches(secret: string, posted: unknown): boolean {
  if (typeof posted !== 'string') return false;
  const expected = Buffer.from(csrfTokenFor(secret));
  const given = Buffer.from(posted);
  return expected.length === given.length && timingSafeEqual(expected, given);
}

/** The secret of a browser that is not signed in, kept in the form cookie. */
export function newFormSecret(): string {
  return randomBytes(32).toString('base64url');
}

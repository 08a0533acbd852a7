import type { Account, Client } from '../domain/accounts/accounts.ts';
import { secretMatches } from '../domain/accounts/secrets.ts';
import type { RefusedSubject } from './access-tokens.ts';

/**
 * Client authentication, one way for both places that take a client id and secret: the token
 * endpoint (docs/api.md §2) and HTTP Basic on `/api` (docs/api.md §3). Each call site keeps its
 * own answer shape (RFC 6749 there, problem details here); the decoding of the header and the
 * check of the secret are these (the accounting of a failure is http/failed-authentication.ts).
 */

/** A client id and secret as the caller sent them. */
export interface ClientCredentials {
  clientId: string;
  clientSecret: string;
}

/** Client ids are URL-safe (`twc_` and base64url); anything else cannot name a client. */
const CLIENT_ID = /^[\w-]{1,256}$/;
const MAX_SECRET_LENGTH = 256;

/**
 * HTTP Basic client credentials: undefined when the header is not Basic, `unreadable` when it
 * is Basic but holds nothing a client could have sent (no colon, %-encoding that does not
 * decode, an id that is no client id, an over-long secret or one holding NUL). RFC 6749 §2.3.1
 * form-encodes both parts before joining them; credentials of the URL-safe alphabet read the
 * same either way.
 */
export function readBasicCredentials(header: string | undefined): ClientCredentials | 'unreadable' | undefined {
  if (!header || !/^basic(\s|$)/i.test(header)) return undefined;
  const decoded = Buffer.from(header.slice(5).trim(), 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon <= 0) return 'unreadable';
  let clientId: string;
  let clientSecret: string;
  try {
    clientId = formDecode(decoded.slice(0, colon));
    clientSecret = formDecode(decoded.slice(colon + 1));
  } catch {
    return 'unreadable';
  }
  if (!CLIENT_ID.test(clientId)) return 'unreadable';
  if (clientSecret === '' || clientSecret.length > MAX_SECRET_LENGTH || clientSecret.includes('\u0000')) return 'unreadable';
  return { clientId, clientSecret };
}

function formDecode(value: string): string {
  return decodeURIComponent(value.replace(/\+/g, ' '));
}

/** A client with its account, as the store or the credentials cache holds them. */
export interface ClientRecord {
  client: Client;
  account: Account;
}

/** What checking a client's credentials found: its record, or why it is refused. */
export type ClientVerdict = { ok: true; client: Client; account: Account } | { ok: false; reason: string; subject: RefusedSubject };

/**
 * Checks a secret against the client it names. An unknown client and a wrong secret are one
 * refusal (`invalid_client`), so nothing tells which; only once the secret was right is the
 * account known, and a disabled account refused with its name for the audit trail.
 */
export function verifyClientSecret(found: ClientRecord | undefined, credentials: ClientCredentials): ClientVerdict {
  if (!found || !secretMatches(credentials.clientSecret, found.client.secret_hash)) {
    return { ok: false, reason: 'invalid_client', subject: { clientId: credentials.clientId } };
  }
  if (found.account.disabled) {
    return { ok: false, reason: 'account disabled', subject: { clientId: credentials.clientId, accountId: found.account.account_id } };
  }
  return { ok: true, client: found.client, account: found.account };
}

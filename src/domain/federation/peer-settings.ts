import { ServiceError } from '../errors.ts';
import type { FieldError } from '../field-error.ts';

/** How a peer's TAXII server is authenticated to (docs/federation.md, "Adding a peer"). */
export const PEER_AUTHS = ['none', 'basic', 'bearer'] as const;
export type PeerAuth = (typeof PEER_AUTHS)[number];

/** The poll interval's bounds: often enough to expire indicators in time, never a hammering. */
export const POLL_SECONDS_MIN = 60;
export const POLL_SECONDS_MAX = 86_400;
export const POLL_SECONDS_DEFAULT = 300;

const MAX_NAME = 64;
const MAX_URL = 2048;
/** Collections read of one peer: each costs a request or more per poll. */
export const MAX_COLLECTIONS = 16;
const MAX_COLLECTION_ID = 128;
const MAX_USERNAME = 256;
const MAX_CREDENTIAL = 4096;
/** A peer's name is a label in /metrics and on the command line: letters, digits, `.`, `_`, `-`. */
const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
/** A TAXII collection id is an identifier, but our own collections also answer to their alias. */
const COLLECTION_ID = /^[A-Za-z0-9][A-Za-z0-9._~-]*$/;

/** What the operator gives to add a peer, as typed (CLI options, a form's fields). */
export interface PeerInput {
  name?: unknown;
  apiRoot?: unknown;
  collections?: unknown;
  auth?: unknown;
  username?: unknown;
  credential?: unknown;
  trust?: unknown;
  pollSeconds?: unknown;
  republish?: unknown;
  enabled?: unknown;
}

/** A peer's settings, checked. `collections` empty means every collection the peer lets us read. */
export interface PeerSettings {
  name: string;
  apiRoot: string;
  collections: string[];
  auth: PeerAuth;
  username: string | null;
  /** The Basic password or the bearer token, in the clear only until the repository seals it. */
  credential: string | null;
  trust: number;
  pollSeconds: number;
  republish: boolean;
  enabled: boolean;
}

/** Checks every field of a new peer; `validation_failed` naming each bad field. */
export function validatePeerSettings(input: PeerInput): PeerSettings {
  const errors: FieldError[] = [];
  const fail = (field: string, message: string) => errors.push({ field, message });

  const name = typeof input.name === 'string' ? input.name.trim() : '';
  if (!NAME.test(name) || name.length > MAX_NAME) fail('name', `must be 1–${MAX_NAME} letters, digits, '.', '_' or '-', starting with a letter or digit`);

  let apiRoot = '';
  const rawRoot = typeof input.apiRoot === 'string' ? input.apiRoot.trim() : '';
  try {
    const url = new URL(rawRoot);
    if (url.protocol !== 'https:' && url.protocol !== 'http:') fail('api_root', 'must be an http: or https: URL');
    else if (url.username || url.password) fail('api_root', 'must not hold credentials: give them with the auth settings');
    else if (url.search || url.hash) fail('api_root', 'must not have a query or a fragment');
    else if (rawRoot.length > MAX_URL) fail('api_root', `must be at most ${MAX_URL} characters`);
    // TAXII 2.1 (§4.2) names resources under an API root by appending to it: it ends with '/'.
    else apiRoot = url.href.endsWith('/') ? url.href : `${url.href}/`;
  } catch {
    fail('api_root', 'must be an http: or https: URL');
  }

  const collections = listOf(input.collections);
  if (collections === undefined) fail('collections', 'must be a list of collection ids');
  else if (collections.length > MAX_COLLECTIONS) fail('collections', `at most ${MAX_COLLECTIONS}`);
  else if (collections.some((c) => !COLLECTION_ID.test(c) || c.length > MAX_COLLECTION_ID)) fail('collections', 'each must be a collection id');

  const auth = (input.auth ?? 'none') as PeerAuth;
  if (!PEER_AUTHS.includes(auth)) fail('auth', `must be one of: ${PEER_AUTHS.join(', ')}`);
  const username = typeof input.username === 'string' && input.username !== '' ? input.username : null;
  const credential = typeof input.credential === 'string' && input.credential !== '' ? input.credential : null;
  if (auth === 'basic') {
    if (!username || username.includes(':') || username.length > MAX_USERNAME || hasControl(username)) fail('username', `Basic authentication needs a username of at most ${MAX_USERNAME} characters, without ':' or control characters`);
  } else if (username !== null) fail('username', 'only Basic authentication has a username');
  if (auth === 'none') {
    if (credential !== null) fail('credential', 'no credential without Basic or bearer authentication');
  } else if (!credential || credential.length > MAX_CREDENTIAL || hasControl(credential)) fail('credential', `must be 1–${MAX_CREDENTIAL} characters, without control characters`);

  const trust = numberOf(input.trust ?? 0.5);
  if (trust === undefined || trust < 0 || trust > 1) fail('trust', 'must be a number from 0 to 1');

  const pollSeconds = numberOf(input.pollSeconds ?? POLL_SECONDS_DEFAULT);
  if (pollSeconds === undefined || !Number.isInteger(pollSeconds) || pollSeconds < POLL_SECONDS_MIN || pollSeconds > POLL_SECONDS_MAX) {
    fail('poll_seconds', `must be a whole number of seconds from ${POLL_SECONDS_MIN} to ${POLL_SECONDS_MAX}`);
  }

  const republish = flagOf(input.republish ?? false);
  if (republish === undefined) fail('republish', 'must be true or false');
  const enabled = flagOf(input.enabled ?? true);
  if (enabled === undefined) fail('enabled', 'must be true or false');

  if (errors.length > 0) throw new ServiceError('validation_failed', `the peer's settings are not valid: ${errors.map((e) => `${e.field} ${e.message}`).join('; ')}`, errors);
  return { name, apiRoot, collections: [...new Set(collections)], auth, username, credential, trust: trust!, pollSeconds: pollSeconds!, republish: republish!, enabled: enabled! };
}

/** What may change of a peer without adding it again. */
export interface PeerChanges {
  trust?: number;
  pollSeconds?: number;
  republish?: boolean;
}

/** Checks the changes given (an absent field stays as it is); `validation_failed` naming each bad one. */
export function validatePeerChanges(input: Pick<PeerInput, 'trust' | 'pollSeconds' | 'republish'>): PeerChanges {
  const checked = validatePeerSettings({ name: 'x', apiRoot: 'https://x.invalid/', ...input });
  const changes: PeerChanges = {
    ...(input.trust !== undefined ? { trust: checked.trust } : {}),
    ...(input.pollSeconds !== undefined ? { pollSeconds: checked.pollSeconds } : {}),
    ...(input.republish !== undefined ? { republish: checked.republish } : {}),
  };
  if (Object.keys(changes).length === 0) throw new ServiceError('validation_failed', 'nothing to change: give the trust, the poll interval or republish', []);
  return changes;
}

function listOf(value: unknown): string[] | undefined {
  if (value === undefined || value === null || value === '') return [];
  if (typeof value === 'string') return value.split(',').map((s) => s.trim()).filter((s) => s !== '');
  if (Array.isArray(value) && value.every((v) => typeof v === 'string')) return value.map((s) => s.trim()).filter((s) => s !== '');
  return undefined;
}

function numberOf(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? value : undefined;
  if (typeof value === 'string' && /^\s*\d+(\.\d+)?\s*$/.test(value)) return Number(value);
  return undefined;
}

function flagOf(value: unknown): boolean | undefined {
  if (typeof value === 'boolean') return value;
  if (value === 'true' || value === 'on' || value === '1' || value === 'yes') return true;
  if (value === 'false' || value === 'off' || value === '0' || value === 'no') return false;
  return undefined;
}

function hasControl(text: string): boolean {
  return /[\u0000-\u001f\u007f]/.test(text);
}

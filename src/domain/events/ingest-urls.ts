import { randomUUID } from 'node:crypto';
import type { Account } from '../accounts/accounts.ts';
import { validName } from '../accounts/accounts.ts';
import { NO_AUDIT, type AuditAction, type AuditTrail } from '../accounts/audit.ts';
import { ServiceError } from '../errors.ts';
import { hashSecret, isIngestSecretShape, newIngestSecret } from '../accounts/secrets.ts';

/**
 * Node ingest URLs (docs/api.md §11): a URL whose path holds a secret, so that a stock SentryPeer
 * node, which can be given a webhook URL but not our token endpoint, can deliver events to one
 * account. ("Ingest" elsewhere in the code, as in `IngestOutcome` and `ingestGroups`, means
 * storing events, whoever sent them.) The secret is the whole credential: shown once, stored as its
 * SHA-256 hash, good only for submitting events, revoked at once.
 */

/** An ingest URL as its owner sees it: never the secret or its hash. */
export interface IngestUrl {
  id: string;
  account_id: string;
  name: string;
  created_at: string;
  /** When a request last authenticated with it, to the minute (INGEST_URL_USE_RESOLUTION_MS); null if never. */
  last_used_at: string | null;
  /** When it was revoked; null while it works. */
  revoked_at: string | null;
}

/** An ingest URL as stored: with the hash of its secret. */
export interface StoredIngestUrl extends IngestUrl {
  secret_hash: string;
}

/** A new ingest URL with its full address, which exists only in this answer. */
export interface IssuedIngestUrl extends IngestUrl {
  ingest_url: string;
}

/** Where ingest URLs are kept. */
export interface IngestUrlsRepository {
  insert(url: StoredIngestUrl): Promise<void>;
  find(id: string): Promise<IngestUrl | undefined>;
  /** An account's ingest URLs, revoked ones included, oldest first. */
  list(accountId: string): Promise<IngestUrl[]>;
  /** Marks it revoked at `at` unless it already is; whether this call revoked it. */
  revoke(id: string, at: string): Promise<boolean>;
  /** The ingest URL whose secret has this hash, revoked or not, with its account as it is now. */
  findBySecretHash(secretHash: string): Promise<{ ingestUrl: IngestUrl; account: Account } | undefined>;
  /** Records a use at `at`, unless a use at or after `notBefore` is recorded already. */
  recordUse(id: string, at: string, notBefore: string): Promise<void>;
}

/** What presenting a secret found: the URL and its account, or why it is refused. */
export type IngestVerdict =
  | { ok: true; ingestUrl: IngestUrl; account: Account }
  | {
      ok: false;
      reason: 'unknown ingest url' | 'ingest url revoked' | 'account disabled';
      /** Whose it was, when the secret named a URL: for the audit trail, never for the caller. */
      ingestUrlId?: string;
      accountId?: string;
    };

/** What the service needs of the rest of the domain. */
export interface IngestUrlsDependencies {
  repo: IngestUrlsRepository;
  /** The account, or a `not_found` error. */
  getAccount(accountId: string): Promise<Account>;
  /** Refuses an account whose plan may not submit (`plan_not_allowed`), as event intake does. */
  assertMaySubmit(account: Account): Promise<void>;
  /** Where clients reach the service (`TOLLWATCH_PUBLIC_URL`), without a trailing slash. */
  publicUrl: string;
  audit?: AuditTrail;
  now?: () => Date;
}

/**
 * Last use is kept to this resolution: a store write per event would cost as much as the
 * event's own, for a value an operator reads to the minute at best.
 */
export const INGEST_URL_USE_RESOLUTION_MS = 60_000;

/** In-process memory of recent use writes, so concurrent requests do not all write; bounded. */
const MAX_REMEMBERED_USES = 10_000;

/** The path under the public URL where ingest URLs live. */
export const INGEST_PATH = '/ingest';

/** Creating, listing, revoking and authenticating ingest URLs: used by the CLI and the HTTP layer. */
export class IngestUrls {
  private readonly deps: Required<IngestUrlsDependencies>;
  /** When this process last wrote each URL's use, in milliseconds. */
  private readonly usesWritten = new Map<string, number>();

  constructor(deps: IngestUrlsDependencies) {
    this.deps = { audit: NO_AUDIT, now: () => new Date(), ...deps };
  }

  /** Creates an ingest URL for an account whose plan may submit; its secret is shown here once. */
  async create(input: { accountId: string; name: string }, actor = 'operator'): Promise<IssuedIngestUrl> {
    const account = await this.deps.getAccount(input.accountId);
    // Same rule as submission itself: a URL that could never deliver an event is not handed out.
    await this.deps.assertMaySubmit(account);
    const name = validName(input.name);
    const secret = newIngestSecret();
    const stored: StoredIngestUrl = {
      id: randomUUID(),
      account_id: account.account_id,
      name,
      secret_hash: hashSecret(secret),
      created_at: this.deps.now().toISOString(),
      last_used_at: null,
      revoked_at: null,
    };
    await this.deps.repo.insert(stored);
    await this.record('ingest_url.created', actor, stored);
    const { secret_hash: _hash, ...view } = stored;
    return { ...view, ingest_url: `${this.deps.publicUrl}${INGEST_PATH}/${secret}` };
  }

  /** An account's ingest URLs with their last use; never their secrets. */
  async list(accountId: string): Promise<IngestUrl[]> {
    await this.deps.getAccount(accountId);
    return this.deps.repo.list(accountId);
  }

  /**
   * Revokes an ingest URL: the next request with it is refused, on every instance, since every
   * request reads the store. Revoking one already revoked changes nothing and answers it as it is.
   */
  async revoke(id: string, actor = 'operator'): Promise<IngestUrl> {
    const found = await this.deps.repo.find(id);
    if (!found) throw new ServiceError('not_found', 'no such ingest URL');
    if (found.revoked_at !== null) return found;
    if (await this.deps.repo.revoke(id, this.deps.now().toISOString())) await this.record('ingest_url.revoked', actor, found);
    return (await this.deps.repo.find(id)) ?? found;
  }

  /**
   * Checks a presented secret. Read from the store on every request, not cached: a revocation or
   * a disabled account bites on the very next request. Success notes the use (see noteUse).
   */
  async authenticate(secret: string): Promise<IngestVerdict> {
    if (!isIngestSecretShape(secret)) return { ok: false, reason: 'unknown ingest url' };
    const found = await this.deps.repo.findBySecretHash(hashSecret(secret));
    if (!found) return { ok: false, reason: 'unknown ingest url' };
    const { ingestUrl, account } = found;
    const subject = { ingestUrlId: ingestUrl.id, accountId: account.account_id };
    if (ingestUrl.revoked_at !== null) return { ok: false, reason: 'ingest url revoked', ...subject };
    if (account.disabled) return { ok: false, reason: 'account disabled', ...subject };
    this.noteUse(ingestUrl);
    return { ok: true, ingestUrl, account };
  }

  /**
   * Records a use at most once per INGEST_URL_USE_RESOLUTION_MS per URL: skipped when the stored value is
   * recent or this process wrote one lately, and the store's own condition keeps instances from
   * piling on. Not awaited: last use is a hint for the owner, and an event must not wait for,
   * or fail by, it. A write that fails is forgotten, so the next request tries again.
   */
  private noteUse(ingestUrl: IngestUrl): void {
    const now = this.deps.now().getTime();
    if (ingestUrl.last_used_at !== null && now - Date.parse(ingestUrl.last_used_at) < INGEST_URL_USE_RESOLUTION_MS) return;
    const written = this.usesWritten.get(ingestUrl.id);
    if (written !== undefined && now - written < INGEST_URL_USE_RESOLUTION_MS) return;
    if (this.usesWritten.size >= MAX_REMEMBERED_USES) this.usesWritten.clear();
    this.usesWritten.set(ingestUrl.id, now);
    const at = new Date(now).toISOString();
    const notBefore = new Date(now - INGEST_URL_USE_RESOLUTION_MS).toISOString();
    this.deps.repo.recordUse(ingestUrl.id, at, notBefore).catch(() => this.usesWritten.delete(ingestUrl.id));
  }

  private record(action: AuditAction, actor: string, url: IngestUrl) {
    // The name and id identify it; the secret and its hash never reach the audit trail.
    return this.deps.audit.record({ action, actor, accountId: url.account_id, detail: { ingest_url_id: url.id, name: url.name } });
  }
}

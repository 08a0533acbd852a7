import { createHash, randomUUID } from 'node:crypto';
import type { Account } from '../accounts/accounts.ts';
import { NO_AUDIT, type AuditTrail } from '../accounts/audit.ts';
import { ServiceError } from '../errors.ts';
import type { FieldError } from '../field-error.ts';
import { canonicalIpAddress } from '../ip-address.ts';
import type { LookupKind } from '../lookups/lookup-aggregates.ts';
import { normalisePhoneNumber } from '../phone-number.ts';
import { numberHash } from '../lookups/number-hash.ts';
import { canonicalUuid } from '../uuid.ts';
import type { ReportedEvidence } from './scores.ts';

/**
 * False-positive reports (docs/api.md §17): a lookup client says an answer was wrong for it, the
 * operator reviews, and an accepted report holds the value's score down for every caller
 * (docs/scoring.md, "Reports"). A pending or rejected report changes no answer for anyone.
 */

/** Why a client reports an answer, as a short code (docs/api.md §17). */
export const REPORT_REASONS = ['own_number', 'customer', 'legitimate_traffic', 'test_traffic', 'other'] as const;
export type ReportReason = (typeof REPORT_REASONS)[number];

/** Longest free text a report may carry, in characters. */
export const MAX_REPORT_NOTE = 500;

export const REPORT_STATES = ['pending', 'accepted', 'rejected'] as const;
export type ReportState = (typeof REPORT_STATES)[number];

/** A report as stored. `kind` is `number` (value a number key) or `ip` (a canonical address). */
export interface StoredReport {
  id: string;
  account_id: string;
  kind: LookupKind;
  value: string;
  reason: ReportReason;
  note: string | null;
  state: ReportState;
  created_at: string;
  decided_at: string | null;
  decision_note: string | null;
}

/** A report as the API shows it to the account that made it. */
export interface ReportView {
  id: string;
  phone_number?: string;
  ip_address?: string;
  reason: ReportReason;
  note: string | null;
  state: ReportState;
  created_at: string;
  decided_at: string | null;
  decision_note: string | null;
}

/** Accepted reports of one value: how many accounts the operator agreed with. */
export interface AcceptedCount {
  kind: LookupKind;
  value: string;
  accounts: number;
}

/** Where reports are kept. */
export interface ReportsRepository {
  /**
   * Stores `report` unless the account already has a pending report of the same value; either
   * way answers the account's pending report of it, and whether it is the one just stored.
   */
  insertPending(report: StoredReport): Promise<{ report: StoredReport; created: boolean }>;
  /** The account's reports, newest first. */
  listForAccount(accountId: string, limit: number): Promise<StoredReport[]>;
  /** Reports in a state (all when undefined), oldest first: the operator's queue. */
  listByState(state: ReportState | undefined, limit: number): Promise<StoredReport[]>;
  find(id: string): Promise<StoredReport | undefined>;
  /**
   * Moves a report from one of `from` to `to`, with the decision's time and note; false when it
   * was in no state of `from` (decided meanwhile, or missing). Announces the change to other
   * processes where the store can (an accepted set that changed).
   */
  decide(id: string, from: readonly ReportState[], to: ReportState, at: string, note: string | null): Promise<boolean>;
  /** Every value with accepted reports, with how many distinct accounts made them. */
  acceptedCounts(): Promise<AcceptedCount[]>;
}

/** The accepted reports as scores read them: per `kind:value`, and a fingerprint of the whole set. */
export interface AcceptedSet {
  readonly byKey: ReadonlyMap<string, ReportedEvidence>;
  /** The numbers' evidence by the SHA-256 of their key, for range lookups, which read numbers by hash. */
  readonly byNumberHash: ReadonlyMap<string, ReportedEvidence>;
  /** Changes whenever any value's accepted reports do: feeds' ETags include it. */
  readonly fingerprint: string;
}

const EMPTY_SET: AcceptedSet = { byKey: new Map(), byNumberHash: new Map(), fingerprint: 'none' };

/** What the accepted set is asked by the services that score: cheap, and without a promise while it is fresh. */
export interface ReportedValues {
  /** The set while it is fresh; undefined when it must be read again (then `load`). */
  current(): AcceptedSet | undefined;
  load(): Promise<AcceptedSet>;
}

/** No reports: what services built without them score with. */
export const NO_REPORTS: ReportedValues = { current: () => EMPTY_SET, load: async () => EMPTY_SET };

/** The accepted evidence about one value in a set. */
export function reportedOf(set: AcceptedSet, kind: LookupKind, value: string): ReportedEvidence | undefined {
  return set.byKey.size === 0 ? undefined : set.byKey.get(`${kind}:${value}`);
}

/**
 * The accepted reports kept in memory, read again after `ttlMs`, when another process commits a
 * decision (where the store can tell, `externalChangeCounter`), or when told (`clear`, by this
 * process's decisions and by access-change notices from other instances). A lookup reads a map
 * entry; the store is read at most once per lifetime, by whichever lookup comes first after it.
 */
export class AcceptedReports implements ReportedValues {
  private readonly repo: Pick<ReportsRepository, 'acceptedCounts'>;
  private readonly ttlMs: number;
  private readonly externalChangeCounter: (() => number) | undefined;
  private set: AcceptedSet | undefined;
  private loadedAt = 0;
  private lastCounter: number | undefined;
  private loading: Promise<AcceptedSet> | undefined;
  private generation = 0;

  constructor(repo: Pick<ReportsRepository, 'acceptedCounts'>, ttlMs: number, externalChangeCounter?: () => number) {
    this.repo = repo;
    this.ttlMs = ttlMs;
    this.externalChangeCounter = externalChangeCounter;
  }

  current(): AcceptedSet | undefined {
    if (!this.set || Date.now() - this.loadedAt >= this.ttlMs || this.externalChangeCounter?.() !== this.lastCounter) return undefined;
    return this.set;
  }

  load(): Promise<AcceptedSet> {
    const fresh = this.current();
    if (fresh) return Promise.resolve(fresh);
    // One read for every lookup that finds the set stale at once.
    this.loading ??= this.read().finally(() => (this.loading = undefined));
    return this.loading;
  }

  /** Forgets the set: the next lookup reads it again. */
  clear(): void {
    this.generation++;
    this.set = undefined;
  }

  private async read(): Promise<AcceptedSet> {
    const generation = this.generation;
    const counter = this.externalChangeCounter?.();
    const startedAt = Date.now();
    const rows = await this.repo.acceptedCounts();
    const set = setOf(rows, this.set);
    // A read begun before a clear may have missed the change: answered, not kept.
    if (generation === this.generation) {
      this.set = set;
      this.loadedAt = startedAt;
      this.lastCounter = counter;
    }
    return set;
  }
}

/** The set of `rows`; the previous set's evidence objects are kept where unchanged, so answers worked out from them stay valid. */
function setOf(rows: AcceptedCount[], previous: AcceptedSet | undefined): AcceptedSet {
  if (rows.length === 0) return EMPTY_SET;
  const sorted = [...rows].sort((a, b) => (a.kind === b.kind ? (a.value < b.value ? -1 : a.value > b.value ? 1 : 0) : a.kind < b.kind ? -1 : 1));
  const byKey = new Map<string, ReportedEvidence>();
  const byNumberHash = new Map<string, ReportedEvidence>();
  const hash = createHash('sha256');
  for (const row of sorted) {
    const key = `${row.kind}:${row.value}`;
    const before = previous?.byKey.get(key);
    const evidence = before && before.accounts === row.accounts ? before : { accounts: row.accounts };
    byKey.set(key, evidence);
    if (row.kind === 'number') byNumberHash.set(numberHash(row.value), evidence);
    hash.update(`${key} ${row.accounts}\n`);
  }
  const fingerprint = hash.digest('base64url').slice(0, 16);
  return previous && previous.fingerprint === fingerprint ? previous : { byKey, byNumberHash, fingerprint };
}

/** What ValueReports needs besides its repository. */
export interface ValueReportsOptions {
  audit?: AuditTrail;
  /** Runs after a decision changed the accepted set: drop it here, announce it to other instances. */
  onAcceptedChanged?: () => void;
  now?: () => Date;
}

/** Most reports one list shows. */
export const MAX_REPORT_LIST = 1000;

/** Submitting, listing and deciding false-positive reports. */
export class ValueReports {
  private readonly repo: ReportsRepository;
  private readonly audit: AuditTrail;
  private readonly onAcceptedChanged: () => void;
  private readonly now: () => Date;

  constructor(repo: ReportsRepository, options: ValueReportsOptions = {}) {
    this.repo = repo;
    this.audit = options.audit ?? NO_AUDIT;
    this.onAcceptedChanged = options.onAcceptedChanged ?? (() => {});
    this.now = options.now ?? (() => new Date());
  }

  /**
   * Stores a report from `account` (pending), or answers its pending report of the same value
   * unchanged (`created: false`). One 422 names every bad field.
   */
  async submit(account: Account, body: unknown, actor: string): Promise<{ report: ReportView; created: boolean }> {
    const { kind, value, reason, note } = parseReport(body);
    const stored: StoredReport = {
      id: randomUUID(),
      account_id: account.account_id,
      kind,
      value,
      reason,
      note,
      state: 'pending',
      created_at: this.now().toISOString(),
      decided_at: null,
      decision_note: null,
    };
    const { report, created } = await this.repo.insertPending(stored);
    if (created) {
      await this.audit.record({
        action: 'report.submitted',
        actor,
        accountId: account.account_id,
        clientId: actor.startsWith('client:') ? actor.slice('client:'.length) : null,
        detail: { report_id: report.id, kind, value, reason },
      });
    }
    return { report: viewOf(report), created };
  }

  /** The account's own reports, newest first: never another account's. */
  async listOwn(accountId: string): Promise<ReportView[]> {
    return (await this.repo.listForAccount(accountId, MAX_REPORT_LIST)).map(viewOf);
  }

  /** The operator's queue: reports in `state` (every state when undefined), oldest first, with their accounts. */
  async queue(state: ReportState | undefined): Promise<StoredReport[]> {
    return this.repo.listByState(state, MAX_REPORT_LIST);
  }

  /** One report, for the operator. */
  async get(id: string): Promise<StoredReport> {
    const uuid = canonicalUuid(id);
    const found = uuid ? await this.repo.find(uuid) : undefined;
    if (!found) throw new ServiceError('not_found', 'no such report');
    return found;
  }

  /** Accepts a pending report: the value's score is held down for everyone from now (docs/scoring.md). */
  async accept(id: string, note: unknown, actor: string): Promise<StoredReport> {
    return this.decide(id, ['pending'], 'accepted', note, actor);
  }

  /** Rejects a pending report (nothing changes), or withdraws an accepted one (its hold on the score is lifted). */
  async reject(id: string, note: unknown, actor: string): Promise<StoredReport> {
    return this.decide(id, ['pending', 'accepted'], 'rejected', note, actor);
  }

  private async decide(id: string, from: readonly ReportState[], to: ReportState, noteInput: unknown, actor: string): Promise<StoredReport> {
    const errors: FieldError[] = [];
    const note = noteOf(noteInput, 'note', errors);
    if (errors.length > 0) throw new ServiceError('validation_failed', errors.map((e) => `${e.field} ${e.message}`).join('; '), errors);
    const before = await this.get(id);
    if (!from.includes(before.state)) throw new ServiceError('validation_failed', `report ${before.id} is ${before.state}: only a ${from.join(' or ')} report can be ${to}`, [{ field: 'state', message: `is ${before.state}` }]);
    const at = this.now().toISOString();
    if (!(await this.repo.decide(before.id, from, to, at, note))) throw new ServiceError('validation_failed', `report ${before.id} was decided meanwhile`, [{ field: 'state', message: 'was decided meanwhile' }]);
    if (before.state === 'accepted' || to === 'accepted') this.onAcceptedChanged();
    await this.audit.record({
      action: to === 'accepted' ? 'report.accepted' : 'report.rejected',
      actor,
      accountId: before.account_id,
      detail: { report_id: before.id, kind: before.kind, value: before.value, from: before.state, ...(note !== null ? { note } : {}) },
    });
    return { ...before, state: to, decided_at: at, decision_note: note };
  }
}

/** A report as its account sees it: the value under the name the lookups use. */
export function viewOf(r: StoredReport): ReportView {
  return {
    id: r.id,
    ...(r.kind === 'number' ? { phone_number: r.value } : { ip_address: r.value }),
    reason: r.reason,
    note: r.note,
    state: r.state,
    created_at: r.created_at,
    decided_at: r.decided_at,
    decision_note: r.decision_note,
  };
}

/** Reads a report's body: exactly one of `phone_number` and `ip_address`, normalised as lookups do; a reason; an optional note. */
export function parseReport(body: unknown): { kind: LookupKind; value: string; reason: ReportReason; note: string | null } {
  const errors: FieldError[] = [];
  const refuse = (field: string, message: string) => void errors.push({ field, message });
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new ServiceError('validation_failed', 'the body must be a JSON object', [{ field: '(body)', message: 'must be a JSON object' }]);
  }
  const input = body as Record<string, unknown>;
  for (const name of Object.keys(input)) if (!['phone_number', 'ip_address', 'reason', 'note'].includes(name)) refuse(name, 'is not a field of a report');
  let kind: LookupKind | undefined;
  let value: string | undefined;
  const hasNumber = input.phone_number !== undefined;
  const hasAddress = input.ip_address !== undefined;
  if (hasNumber && hasAddress) refuse('ip_address', 'a report names one value: a phone_number or an ip_address, not both');
  else if (!hasNumber && !hasAddress) refuse('phone_number', 'is required (or ip_address)');
  else if (hasNumber) {
    const number = typeof input.phone_number === 'string' && input.phone_number.length <= 256 ? normalisePhoneNumber(input.phone_number) : null;
    if (number) [kind, value] = ['number', number.key];
    else refuse('phone_number', 'must be a phone number as a lookup takes it (docs/api.md §7)');
  } else {
    const ip = typeof input.ip_address === 'string' && input.ip_address.length <= 256 ? canonicalIpAddress(input.ip_address.trim()) : null;
    if (ip) [kind, value] = ['ip', ip];
    else refuse('ip_address', 'must be an IPv4 or IPv6 address');
  }
  const reason = input.reason;
  if (reason === undefined) refuse('reason', 'is required');
  else if (typeof reason !== 'string' || !(REPORT_REASONS as readonly string[]).includes(reason)) refuse('reason', `must be one of: ${REPORT_REASONS.join(', ')}`);
  const note = noteOf(input.note, 'note', errors);
  if (errors.length > 0 || !kind || !value) throw new ServiceError('validation_failed', `invalid report: ${errors.map((e) => e.field).join(', ')}`, errors);
  return { kind, value, reason: reason as ReportReason, note };
}

/** Free text: absent or null is none; otherwise a string of at most MAX_REPORT_NOTE characters, kept as written. */
function noteOf(input: unknown, field: string, errors: FieldError[]): string | null {
  if (input === undefined || input === null) return null;
  if (typeof input !== 'string') {
    errors.push({ field, message: 'must be a string' });
    return null;
  }
  if (Array.from(input).length > MAX_REPORT_NOTE) {
    errors.push({ field, message: `must be at most ${MAX_REPORT_NOTE} characters` });
    return null;
  }
  return input.trim() === '' ? null : input;
}

import { randomUUID } from 'node:crypto';
import { NO_AUDIT, type AuditTrail } from '../accounts/audit.ts';
import { ServiceError } from '../errors.ts';
import { parseSourceRange, type SourceRange } from '../events/source-range.ts';
import type { FieldError } from '../field-error.ts';
import { canonicalIpAddress } from '../ip-address.ts';
import { normalisePhoneNumber } from '../phone-number.ts';
import { canonicalUuid } from '../uuid.ts';
import { rangeOfNumberKey } from '../number-range.ts';

/**
 * Allowlists (docs/api.md §16): "this one is mine, never block it". An account's own list marks
 * its lookups' answers (`allowlisted`), lets its call guard's calls through and holds back its
 * alerts and its feeds' entries; the operator's list keeps entries out of what is published to
 * everyone (feeds, TAXII, the DNS zones). Neither ever hides evidence from a lookup.
 */

export const ALLOWLIST_KINDS = ['phone_number', 'number_prefix', 'ip_address', 'ip_range'] as const;
export type AllowlistKind = (typeof ALLOWLIST_KINDS)[number];

/** The owner of the operator's list; every other owner is an account id (a UUID). */
export const OPERATOR_LIST = 'operator';

/**
 * Most entries one list may hold. A list is kept whole in every instance's memory and a range
 * is tested entry by entry, so its size is ours to bound; a thousand exceptions is far beyond
 * what a false positive calls for.
 */
export const MAX_ALLOWLIST_ENTRIES = 1000;
/** Longest note, in characters. */
export const MAX_NOTE_LENGTH = 500;
/** Longest value as sent: a number's 64 characters with URI wrapping, or an IPv6 range. */
const MAX_VALUE_LENGTH = 512;

/** One entry as stored and answered. */
export interface AllowlistEntry {
  id: string;
  kind: AllowlistKind;
  /** The normalised value lookups match on: a number key, a canonical address, a range's network and length. */
  value: string;
  note: string | null;
  /** Who added it: `client:<id>`, `user:<id>` or `operator`. */
  added_by: string;
  added_at: string;
}

/** What an answer names of the entry that allowlisted it. */
export interface AllowlistMatch {
  id: string;
  kind: AllowlistKind;
  value: string;
}

export interface AllowlistRepository {
  /** The list's entries, oldest first. */
  list(owner: string): Promise<AllowlistEntry[]>;
  /** Stores the entry unless the list holds its kind and value already: what the list holds then, and whether it is new. */
  insert(owner: string, entry: AllowlistEntry): Promise<{ entry: AllowlistEntry; created: boolean }>;
  /** Removes one entry: it, or undefined when the list has none of that id. */
  delete(owner: string, id: string): Promise<AllowlistEntry | undefined>;
}

/**
 * One list made ready for lookups: exact values in maps, prefixes by length, ranges tested in
 * turn. An exact entry wins over a prefix or range, and a longer prefix or range over a shorter,
 * so the entry an answer names is the most specific one.
 */
export class AllowlistMatcher {
  readonly size: number;
  /** Changes whenever the entries do: part of a feed's ETag. */
  readonly fingerprint: string;
  /** The entries' ids: what another reading of the list lacks was removed since. */
  readonly ids: ReadonlySet<string>;
  private readonly numbers = new Map<string, AllowlistEntry>();
  private readonly prefixes = new Map<string, AllowlistEntry>();
  private readonly prefixLengths: number[];
  private readonly addresses = new Map<string, AllowlistEntry>();
  private readonly ranges: Array<{ range: SourceRange; bits: number; entry: AllowlistEntry }> = [];

  constructor(entries: readonly AllowlistEntry[]) {
    this.size = entries.length;
    this.fingerprint = entries.map((e) => e.id).sort().join(',');
    this.ids = new Set(entries.map((e) => e.id));
    const lengths = new Set<number>();
    for (const entry of entries) {
      if (entry.kind === 'phone_number') this.numbers.set(entry.value, entry);
      else if (entry.kind === 'number_prefix') {
        this.prefixes.set(entry.value, entry);
        lengths.add(entry.value.length);
      } else if (entry.kind === 'ip_address') this.addresses.set(entry.value, entry);
      else {
        const range = parseSourceRange(entry.value);
        if (range) this.ranges.push({ range, bits: Number(entry.value.slice(entry.value.indexOf('/') + 1)), entry });
      }
    }
    this.prefixLengths = [...lengths].sort((a, b) => b - a);
    this.ranges.sort((a, b) => b.bits - a.bits);
  }

  /** The entry that allowlists a number key, or undefined. */
  number(key: string): AllowlistEntry | undefined {
    const exact = this.numbers.get(key);
    if (exact) return exact;
    for (const length of this.prefixLengths) {
      if (length > key.length) continue;
      const entry = this.prefixes.get(key.slice(0, length));
      if (entry) return entry;
    }
    return undefined;
  }

  /**
   * The entry that keeps a number range (a block's prefix, number-range.ts) out of a feed, or
   * undefined: a prefix covering the whole block, or a number or longer prefix inside it, since
   * listing the block would block what that entry allowlists.
   */
  numberRange(rangePrefix: string): AllowlistEntry | undefined {
    const covering = this.number(rangePrefix);
    if (covering && covering.kind === 'number_prefix') return covering;
    // A number of the block is its prefix and RANGE_DIGITS more digits (number-range.ts).
    for (const [value, entry] of this.numbers) if (rangeOfNumberKey(value) === rangePrefix) return entry;
    for (const [value, entry] of this.prefixes) if (value.length > rangePrefix.length && value.startsWith(rangePrefix)) return entry;
    return undefined;
  }

  /** The entry that allowlists a canonical address, or undefined. */
  address(ip: string): AllowlistEntry | undefined {
    const exact = this.addresses.get(ip);
    if (exact) return exact;
    for (const { range, entry } of this.ranges) if (range.includes(ip)) return entry;
    return undefined;
  }
}

/** A list with nothing on it: what most accounts have. */
export const EMPTY_ALLOWLIST = new AllowlistMatcher([]);

/** What an answer says of an entry: enough to find it in the list, nothing of its note. */
export function matchOf(entry: AllowlistEntry): AllowlistMatch {
  return { id: entry.id, kind: entry.kind, value: entry.value };
}

/** How lookups, feeds and the zones read the lists: from memory once loaded, loading when not. */
export interface AllowlistReader {
  /** The list as kept, when it is kept and fresh; else undefined, and `load` reads it. */
  kept(owner: string): AllowlistMatcher | undefined;
  load(owner: string): Promise<AllowlistMatcher>;
  /** The list as last read, fresh or not (empty before any read): for answers that must not wait for a read. */
  lastRead(owner: string): AllowlistMatcher;
}

/** Reads no list: every value is allowlisted nowhere. */
export const NO_ALLOWLISTS: AllowlistReader = { kept: () => EMPTY_ALLOWLIST, load: async () => EMPTY_ALLOWLIST, lastRead: () => EMPTY_ALLOWLIST };

export interface AllowlistsOptions {
  audit?: AuditTrail;
  /** Told after every change made here, with the list's owner: every instance is told to forget its lists. */
  changed?: (owner: string) => void;
  /**
   * How long a list is kept before it is read again: the bound for a change nobody announces
   * (made to the store by hand, or a notice lost).
   */
  ttlMs?: number;
  /** Moves whenever another process changed the store's allowlists (SQLite: migration 021's counter). */
  externalChangeCounter?: () => number;
  now?: () => Date;
}

/** Lists kept this long at most without a notice (`AllowlistsOptions.ttlMs`). */
export const ALLOWLIST_TTL_MS = 60_000;

interface Kept {
  matcher: AllowlistMatcher;
  loadedAt: number;
  counter: number | undefined;
}

/** Adding, listing and removing entries of one list, and every list kept in memory for reading. */
export class Allowlists implements AllowlistReader {
  private readonly repo: AllowlistRepository;
  private readonly audit: AuditTrail;
  private readonly changed: (owner: string) => void;
  private readonly ttlMs: number;
  private readonly externalChangeCounter: (() => number) | undefined;
  private readonly now: () => Date;
  private readonly lists = new Map<string, Kept>();
  private readonly loading = new Map<string, Promise<AllowlistMatcher>>();
  /** Every list as last read, kept across `forget`: what an answer that cannot wait goes by meanwhile. */
  private readonly lastReads = new Map<string, AllowlistMatcher>();
  /** Moves with every `forget`: a load begun before one is not kept. */
  private generation = 0;

  constructor(repo: AllowlistRepository, options: AllowlistsOptions = {}) {
    this.repo = repo;
    this.audit = options.audit ?? NO_AUDIT;
    this.changed = options.changed ?? (() => {});
    this.ttlMs = options.ttlMs ?? ALLOWLIST_TTL_MS;
    this.externalChangeCounter = options.externalChangeCounter;
    this.now = options.now ?? (() => new Date());
  }

  /** Adds an entry from `{kind, value, note?}`; an entry the list holds already is answered as it is, not added twice. */
  async add(owner: string, body: unknown, actor: string): Promise<{ entry: AllowlistEntry; created: boolean }> {
    const input = asObject(body);
    const errors: FieldError[] = [];
    for (const field of Object.keys(input)) {
      if (field !== 'kind' && field !== 'value' && field !== 'note') errors.push({ field, message: 'is not a field of an allowlist entry' });
    }
    const kind = input.kind;
    const known = (ALLOWLIST_KINDS as readonly unknown[]).includes(kind);
    if (!known) errors.push({ field: 'kind', message: `must be one of ${ALLOWLIST_KINDS.join(', ')}` });
    let value = '';
    if (known) value = valueOf(kind as AllowlistKind, input.value, errors);
    else if (typeof input.value !== 'string') errors.push({ field: 'value', message: 'must be a non-empty string' });
    const note = noteOf(input.note, errors);
    if (errors.length > 0) throw new ServiceError('validation_failed', `${errors.length} field${errors.length === 1 ? ' is' : 's are'} invalid`, errors);
    const held = await this.repo.list(owner);
    const same = held.find((e) => e.kind === kind && e.value === value);
    if (same) return { entry: same, created: false };
    if (held.length >= MAX_ALLOWLIST_ENTRIES) throw new ServiceError('limit_reached', `an allowlist holds at most ${MAX_ALLOWLIST_ENTRIES} entries`);
    const stored = await this.repo.insert(owner, {
      id: randomUUID(),
      kind: kind as AllowlistKind,
      value,
      note,
      added_by: actor,
      added_at: this.now().toISOString(),
    });
    if (stored.created) {
      this.afterChange(owner);
      await this.record('allowlist.entry_added', owner, actor, stored.entry);
    }
    return stored;
  }

  /** The list's entries, oldest first. */
  async list(owner: string): Promise<AllowlistEntry[]> {
    return this.repo.list(owner);
  }

  /** Removes an entry by id; another list's, or none, is 404 `not_found`. */
  async remove(owner: string, id: string, actor: string): Promise<AllowlistEntry> {
    const canonical = canonicalUuid(id);
    const removed = canonical ? await this.repo.delete(owner, canonical) : undefined;
    if (!removed) throw new ServiceError('not_found', 'no such allowlist entry');
    this.afterChange(owner);
    await this.record('allowlist.entry_removed', owner, actor, removed);
    return removed;
  }

  kept(owner: string): AllowlistMatcher | undefined {
    const kept = this.lists.get(owner);
    if (!kept) return undefined;
    if (Date.now() - kept.loadedAt >= this.ttlMs || (this.externalChangeCounter && this.externalChangeCounter() !== kept.counter)) {
      this.lists.delete(owner);
      return undefined;
    }
    return kept.matcher;
  }

  load(owner: string): Promise<AllowlistMatcher> {
    const pending = this.loading.get(owner);
    if (pending) return pending;
    const generation = this.generation;
    const counter = this.externalChangeCounter?.();
    const loadedAt = Date.now();
    const loading = this.repo
      .list(owner)
      .then((entries) => {
        const matcher = entries.length === 0 ? EMPTY_ALLOWLIST : new AllowlistMatcher(entries);
        if (generation === this.generation) this.lists.set(owner, { matcher, loadedAt, counter });
        this.lastReads.set(owner, matcher);
        return matcher;
      })
      .finally(() => {
        if (this.loading.get(owner) === loading) this.loading.delete(owner);
      });
    this.loading.set(owner, loading);
    return loading;
  }

  lastRead(owner: string): AllowlistMatcher {
    return this.lastReads.get(owner) ?? EMPTY_ALLOWLIST;
  }

  /** Drops every list kept: another instance announced a change (or notices may have been lost). */
  forget(): void {
    this.generation += 1;
    this.lists.clear();
    this.loading.clear();
  }

  private afterChange(owner: string): void {
    this.forget();
    this.changed(owner);
  }

  private async record(action: 'allowlist.entry_added' | 'allowlist.entry_removed', owner: string, actor: string, entry: AllowlistEntry): Promise<void> {
    const operator = owner === OPERATOR_LIST;
    await this.audit.record({
      action,
      actor,
      accountId: operator ? null : owner,
      clientId: actor.startsWith('client:') ? actor.slice('client:'.length) : null,
      detail: { list: operator ? 'operator' : 'account', id: entry.id, kind: entry.kind, value: entry.value, ...(entry.note !== null ? { note: entry.note } : {}) },
    });
  }
}

/** The normalised value of an entry of `kind`, or '' with the field's error pushed. */
export function valueOf(kind: AllowlistKind, raw: unknown, errors: FieldError[]): string {
  if (typeof raw !== 'string' || raw.trim() === '' || raw.length > MAX_VALUE_LENGTH) {
    errors.push({ field: 'value', message: typeof raw === 'string' && raw.length > MAX_VALUE_LENGTH ? `must be at most ${MAX_VALUE_LENGTH} characters` : 'must be a non-empty string' });
    return '';
  }
  const text = raw.trim();
  switch (kind) {
    case 'phone_number':
    case 'number_prefix': {
      // The key lookups match on (docs/api.md §7): +CC…, 00CC… and 011CC… are one number, and
      // a prefix written 0044 covers every +44 number.
      const number = normalisePhoneNumber(text);
      if (number) return number.key;
      errors.push({ field: 'value', message: `must be a phone number${kind === 'number_prefix' ? ' prefix' : ''}: up to 64 digits, letters, * or #, optionally after + (tel: and sip: URIs and separators are accepted)` });
      return '';
    }
    case 'ip_address': {
      const ip = canonicalIpAddress(text);
      if (ip) return ip;
      errors.push({ field: 'value', message: text.includes('/') ? 'must be a single IPv4 or IPv6 address; a range is kind ip_range' : 'must be an IPv4 or IPv6 address' });
      return '';
    }
    case 'ip_range': {
      const range = parseSourceRange(text);
      if (range) return range.text;
      errors.push({ field: 'value', message: 'must be a range in CIDR notation (198.51.100.0/24, 2001:db8::/32): an address, a slash and a prefix length of its family' });
      return '';
    }
  }
}

function noteOf(raw: unknown, errors: FieldError[]): string | null {
  if (raw === undefined || raw === null) return null;
  if (typeof raw !== 'string' || raw.length > MAX_NOTE_LENGTH || /[\u0000-\u001f\u007f]/.test(raw)) {
    errors.push({ field: 'note', message: `must be text of at most ${MAX_NOTE_LENGTH} characters, without control characters` });
    return null;
  }
  const note = raw.trim();
  return note === '' ? null : note;
}

function asObject(body: unknown): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new ServiceError('validation_failed', 'the body must be a JSON object', [{ field: 'body', message: 'must be a JSON object' }]);
  }
  return body as Record<string, unknown>;
}

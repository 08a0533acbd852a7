import { ServiceError } from '../errors.ts';
import type { FieldError } from '../field-error.ts';
import type { Permission } from '../accounts/permissions.ts';
import type { IndicatorKind } from './stix-indicators.ts';

/**
 * The TAXII 2.1 collections (docs/taxii.md): what each holds, who may read it, and the reading of
 * a request's filters and pages. The publisher (taxii-publication.ts) writes the versions these
 * read; nothing here knows HTTP or SQL.
 */

export interface TaxiiCollection {
  /** TAXII 2.1 §5.2.1: a UUIDv4, fixed, so a platform's configured collection id never changes. */
  id: string;
  /**
   * Its name in URLs too (§5.2.1 alias): the feed of the same content is /api/feeds/{alias}, and
   * for `number-ranges` the phone-number feed's range entries (`ranges=include`).
   */
  alias: IndicatorKind;
  title: string;
  description: string;
  /** What a client needs to read it: the permission of the lookups and feed of the same data. */
  permission: Permission;
}

export const TAXII_COLLECTIONS: readonly TaxiiCollection[] = [
  {
    id: '8b7a6f2e-3c1d-4e5f-9a0b-1c2d3e4f5a6b',
    alias: 'ip-addresses',
    title: 'Tollwatch: source addresses of toll-fraud probes',
    description:
      'STIX 2.1 indicators of the source addresses the shared honeypot fleet saw probing SIP servers, scoring at least the collection threshold; revoked when they fall below it.',
    permission: 'read:ip-addresses',
  },
  {
    id: '2f9c8d7e-6b5a-4c3d-8e1f-0a9b8c7d6e5f',
    alias: 'phone-numbers',
    title: 'Tollwatch: numbers called by toll-fraud probes',
    description:
      'STIX 2.1 indicators of the numbers attackers dialled at the shared honeypot fleet (pattern x-tollwatch-phone-number:value, the E.164 key), scoring at least the collection threshold; revoked when they fall below it.',
    permission: 'read:phone-numbers',
  },
  {
    id: '5d3e1a7c-9b2f-4c8e-a1d6-3f7b9e2c4a80',
    alias: 'number-ranges',
    title: 'Tollwatch: number ranges called by toll-fraud probes',
    description:
      "STIX 2.1 indicators of the blocks of 100 numbers (a number key less its last two digits) whose numbers attackers dialled at the shared honeypot fleet, pattern x-tollwatch-phone-number:value LIKE '+prefix__', scoring at least the collection threshold by the range score; revoked when they fall below it.",
    permission: 'read:phone-numbers',
  },
];

/** A collection by its id or its alias. */
export function collectionNamed(idOrAlias: string): TaxiiCollection | undefined {
  return TAXII_COLLECTIONS.find((c) => c.id === idOrAlias || c.alias === idOrAlias);
}

/** The only STIX type and version the collections hold. */
const OBJECT_TYPE = 'indicator';
const SPEC_VERSION = '2.1';

/** Which versions of each object a request asks for (`match[version]`, TAXII 2.1 §3.4.1). */
export interface VersionChoice {
  all: boolean;
  first: boolean;
  last: boolean;
  /** Exact `modified` values, in STIX's millisecond form. */
  modified: string[];
}

/** A read of a collection's versions, oldest date_added first. */
export interface VersionQuery {
  collection: IndicatorKind;
  /** Only versions added strictly after this instant (ms since the epoch). */
  afterMs: number;
  limit: number;
  /** Only these object ids (`match[id]`, or the path's object). */
  ids?: string[];
  versions: VersionChoice;
}

export interface KeptVersion {
  addedMs: number;
  objectId: string;
  modified: string;
  /** The STIX object as published (JSON text). */
  body: string;
}

export interface VersionPage {
  versions: KeptVersion[];
  more: boolean;
}

/** What the collections read from the store. */
export interface TaxiiReads {
  page(query: VersionQuery): Promise<VersionPage>;
  /** Whether any version of the object is kept. */
  objectKept(collection: IndicatorKind, objectId: string): Promise<boolean>;
}

/** A page as served: the versions, and where the next page starts when there is one. */
export interface TaxiiPage {
  versions: KeptVersion[];
  more: boolean;
  next: string | undefined;
}

/** The endpoints' parameters (TAXII 2.1 §5.3–5.8): which each takes. */
export type Endpoint = 'objects' | 'manifest' | 'object' | 'versions';

const PARAMETERS: Record<Endpoint, readonly string[]> = {
  objects: ['added_after', 'limit', 'next', 'match[id]', 'match[type]', 'match[version]', 'match[spec_version]'],
  manifest: ['added_after', 'limit', 'next', 'match[id]', 'match[type]', 'match[version]', 'match[spec_version]'],
  object: ['added_after', 'limit', 'next', 'match[version]', 'match[spec_version]'],
  versions: ['added_after', 'limit', 'next', 'match[spec_version]'],
};

/** Most versions one answer holds, and what a request without `limit` gets. */
export const MAX_PAGE_SIZE = 1000;

/** A request's filters, read and checked. */
export interface TaxiiRequest {
  afterMs: number;
  limit: number;
  ids: string[] | undefined;
  versions: VersionChoice;
  /** False when `match[type]` or `match[spec_version]` names nothing these collections hold. */
  matchesAnything: boolean;
}

/**
 * Reads an endpoint's query parameters (TAXII 2.1 §3.4). A malformed one is a 400 naming each
 * (`validation_failed`, which the TAXII scope answers as 400); a parameter TAXII does not define
 * is ignored, as §3.4.1 allows, so clients that send extras keep working.
 */
export function readRequest(endpoint: Endpoint, input: Readonly<Record<string, unknown>>): TaxiiRequest {
  const errors: FieldError[] = [];
  const refuse = (field: string, message: string) => void errors.push({ field, message });
  const single = (name: string): string | undefined => {
    if (!PARAMETERS[endpoint].includes(name)) return undefined;
    const value = input[name];
    if (value === undefined) return undefined;
    if (typeof value !== 'string') {
      refuse(name, 'must be given once');
      return undefined;
    }
    return value;
  };
  const list = (name: string): string[] | undefined => {
    const value = single(name);
    if (value === undefined) return undefined;
    const items = value.split(',');
    if (items.some((item) => item === '')) refuse(name, 'must be a comma-separated list without empty items');
    return items;
  };

  let afterMs = Number.NEGATIVE_INFINITY;
  const addedAfter = single('added_after');
  if (addedAfter !== undefined) {
    const at = millisecondsOf(addedAfter);
    if (at === undefined) refuse('added_after', 'must be an RFC 3339 timestamp, such as 2026-11-27T10:00:00.000Z');
    else afterMs = at.ms;
  }
  const next = single('next');
  if (next !== undefined) {
    const position = positionOf(next);
    if (position === undefined) refuse('next', 'is not a value this server gave');
    // Both given: the later wins. A client may send next with the original added_after (OpenCTI's feed) or without it (its connector).
    else afterMs = Math.max(afterMs, position);
  }
  let limit = MAX_PAGE_SIZE;
  const limitText = single('limit');
  if (limitText !== undefined) {
    if (/^[1-9]\d{0,8}$/.test(limitText)) limit = Math.min(Number(limitText), MAX_PAGE_SIZE);
    else refuse('limit', 'must be a positive integer');
  }
  const ids = list('match[id]');
  if (ids?.some((id) => !/^[a-z0-9][a-z0-9-]*--[0-9a-f-]{36}$/i.test(id))) refuse('match[id]', 'must list STIX identifiers (type--UUID)');
  const types = list('match[type]');
  const specVersions = list('match[spec_version]');
  const versions = versionChoiceOf(list('match[version]'), refuse);
  if (errors.length > 0) throw new ServiceError('validation_failed', `invalid parameters: ${errors.map((e) => e.field).join(', ')}`, errors);
  return {
    afterMs,
    limit,
    ids,
    versions,
    matchesAnything: (types === undefined || types.includes(OBJECT_TYPE)) && (specVersions === undefined || specVersions.includes(SPEC_VERSION)),
  };
}

function versionChoiceOf(items: string[] | undefined, refuse: (field: string, message: string) => void): VersionChoice {
  // No match[version]: the latest version of each object (TAXII 2.1 §3.4.1).
  const choice: VersionChoice = { all: false, first: false, last: items === undefined, modified: [] };
  for (const item of items ?? []) {
    if (item === 'all') choice.all = true;
    else if (item === 'first') choice.first = true;
    else if (item === 'last') choice.last = true;
    else {
      const at = millisecondsOf(item);
      if (at === undefined) refuse('match[version]', 'must be first, last, all or a timestamp');
      // Versions are kept to the millisecond: a finer one matches none of them.
      else if (!at.finer) choice.modified.push(new Date(at.ms).toISOString());
    }
  }
  if (choice.all && (items?.length ?? 0) > 1) refuse('match[version]', 'all must not be combined with another value');
  return choice;
}

/**
 * An RFC 3339 timestamp (TAXII wants UTC with `Z` and microseconds; offsets and any number of
 * fraction digits are read too, as clients send them) as whole milliseconds, and whether it
 * had digits finer than that. Comparisons with whole-millisecond date_added values stay exact:
 * date_added > t exactly when date_added > the millisecond t falls in.
 */
export function millisecondsOf(text: string): { ms: number; finer: boolean } | undefined {
  const m = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2}:\d{2})(?:\.(\d+))?(Z|[+-]\d{2}:\d{2})$/i.exec(text);
  if (!m) return undefined;
  const [, day, time, fraction = '', zone] = m;
  // Date.parse rolls 02-30 over to 03-02: the date must come back as written.
  const utc = Date.parse(`${day}T${time}Z`);
  if (Number.isNaN(utc) || new Date(utc).toISOString().slice(0, 19) !== `${day}T${time}`) return undefined;
  const whole = Date.parse(`${day}T${time}${zone!.toUpperCase()}`);
  return { ms: whole + Number(fraction.slice(0, 3).padEnd(3, '0')), finer: /[1-9]/.test(fraction.slice(3)) };
}

/** A date_added as TAXII writes timestamps: UTC, six fraction digits (§2). */
export function taxiiTimestamp(ms: number): string {
  return new Date(ms).toISOString().replace('Z', '000Z');
}

/**
 * `next` (§3.4): the date_added of the last version served, opaque to clients. Stateless, so it
 * never expires and holds across restarts and instances; the rest of the request is read again
 * with it, so it can never widen what a client may see.
 */
export function nextOf(addedMs: number): string {
  return Buffer.from(`tw1:${addedMs}`).toString('base64url');
}

function positionOf(next: string): number | undefined {
  if (!/^[A-Za-z0-9_-]{1,40}$/.test(next)) return undefined;
  const m = /^tw1:(\d{1,16})$/.exec(Buffer.from(next, 'base64url').toString('latin1'));
  return m ? Number(m[1]) : undefined;
}

/** Reads a collection's versions for one endpoint's request. */
export class TaxiiCollections {
  private readonly reads: TaxiiReads;

  constructor(reads: TaxiiReads) {
    this.reads = reads;
  }

  /** Objects and manifests: every object's chosen versions, oldest date_added first. */
  async page(collection: TaxiiCollection, request: TaxiiRequest, objectId?: string): Promise<TaxiiPage> {
    if (!request.matchesAnything || (objectId !== undefined && request.ids && !request.ids.includes(objectId))) return { versions: [], more: false, next: undefined };
    const ids = objectId !== undefined ? [objectId] : request.ids;
    const { versions, more } = await this.reads.page({
      collection: collection.alias,
      afterMs: Number.isFinite(request.afterMs) ? request.afterMs : -1,
      limit: request.limit,
      ...(ids ? { ids } : {}),
      versions: request.versions,
    });
    const last = versions.at(-1);
    return { versions, more, next: more && last ? nextOf(last.addedMs) : undefined };
  }

  /** Whether an object is in the collection at all (404 otherwise, §5.6). */
  holds(collection: TaxiiCollection, objectId: string): Promise<boolean> {
    return this.reads.objectKept(collection.alias, objectId);
  }
}

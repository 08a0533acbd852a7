/**
 * What the service counts, as the code that knows each fact tells it. This module is the
 * vocabulary only, with no client library behind it: the HTTP layer and the token endpoint call
 * it, `prometheus-metrics.ts` implements it for the server, and `NO_METRICS` stands in for the
 * CLI and for tests that do not look. Every label value is one of a fixed set (or a route
 * pattern, fixed when routes register), so no request can add series.
 */

/** Which kind of value a lookup was about. */
export type LookupMetricKind = 'phone' | 'ip';

/** What a looked-up value turned out to be (docs/api.md §7). */
export type LookupResult = 'found' | 'not_found' | 'invalid';

/** What became of one submitted event (docs/api.md §5). */
export type IntakeOutcome = 'created' | 'replayed' | 'conflict' | 'invalid';

/** The limits whose refusals (429) are counted: the plan's two allowances, and the failed-authentication throttle. */
export type RefusingLimit = 'lookups' | 'submissions' | 'event_reads' | 'reports' | 'auth_failures';

/** Which DNS zone answered (docs/dns.md); `none` for a name in neither, or a packet with no question read. */
export type DnsMetricZone = 'numbers' | 'addresses' | 'none';

/** The rcodes the DNS server answers. */
export type DnsMetricRcode = 'NOERROR' | 'NXDOMAIN' | 'REFUSED' | 'FORMERR' | 'NOTIMP' | 'SERVFAIL' | 'BADVERS';

/** The label of answers no route took: one value however many distinct paths are asked. */
export const UNMATCHED_ROUTE = 'unmatched';

/** Counts the answers of one route pattern; made once per route, when it registers. */
export interface RouteMetrics {
  /** One answer: its method, status and how long it took from the request's arrival. */
  answered(method: string, status: number, milliseconds: number): void;
}

/** Where health is read from at each scrape. */
export interface HealthSources {
  /** Resolves when the store answers a trivial query (the readiness check). */
  store: () => Promise<void>;
  /** Whether Redis is reachable; absent when no Redis is configured. */
  coordination?: () => boolean;
  /** Events stored but not yet folded into the lookup aggregates, as this process knows. */
  foldBacklog?: () => number;
  /** How long the oldest unfolded event has waited, in ms, as this process knows. */
  foldLagMs?: () => number;
  /** Aggregate rows the fold keeps in memory (src/store/fold/fold-row-cache.ts), as of its last step here. */
  foldRowsKept?: () => number;
  /** Each peer's status as the store holds it (docs/federation.md, "Status"). */
  peers?: () => Promise<PeerMetric[]>;
}

/** What `/metrics` shows of one peer: its name (the operator's, a fixed set) and its status. */
export interface PeerMetric {
  name: string;
  status: { lastSuccessAt: string | null; failures: number; objectsRead: number; objectsAccepted: number; objectsSkipped: number; objectsRefused: number };
}

/** The text a scrape receives, and its media type. */
export interface MetricsExposition {
  contentType: string;
  text(): Promise<string>;
}

/** The counting interface of the service. */
export interface Metrics {
  /** The recorder for one route pattern (`UNMATCHED_ROUTE` for paths no route takes). */
  route(pattern: string): RouteMetrics;
  /** `count` events of a single submission or a batch met `outcome`. */
  eventsIngested(mode: 'single' | 'batch', outcome: IntakeOutcome, count?: number): void;
  /** `count` values of a single or bulk lookup of `kind` had `result`. */
  lookups(kind: LookupMetricKind, mode: 'single' | 'bulk', result: LookupResult, count?: number): void;
  /** The token endpoint issued an access token. */
  tokenIssued(): void;
  /** The token endpoint refused, with this RFC 6749 error code (a fixed set: `OAuthErrorCode`). */
  tokenRefused(reason: string): void;
  /** A request was refused with 429 by this limit. */
  rateLimited(limit: RefusingLimit): void;
  /** An account's allowance of `group` ran low (a tenth or less left) or out, once per window. */
  allowanceNotice(group: 'lookups' | 'submissions' | 'event_reads', level: 'low' | 'spent'): void;
  /** The DNS server answered a question of `zone` with `rcode` (never the name asked); `truncated` over UDP. */
  dnsAnswered(zone: DnsMetricZone, rcode: DnsMetricRcode, transport: 'udp' | 'tcp', truncated: boolean): void;
  /** The DNS server's rate limit dropped an answer, or sent it truncated and empty instead. */
  dnsLimited(verdict: 'drop' | 'truncate'): void;
  /** Reads store and coordination health from these at each scrape. */
  watchHealth(sources: HealthSources): void;
  /** What `GET /metrics` serves; undefined where nothing is collected (then it is not served). */
  readonly exposition: MetricsExposition | undefined;
}

const NO_ROUTE_METRICS: RouteMetrics = { answered() {} };

/** Counts nothing: the CLI's, and every test's that does not read metrics. */
export const NO_METRICS: Metrics = {
  route: () => NO_ROUTE_METRICS,
  eventsIngested() {},
  lookups() {},
  tokenIssued() {},
  tokenRefused() {},
  rateLimited() {},
  allowanceNotice() {},
  dnsAnswered() {},
  dnsLimited() {},
  watchHealth() {},
  exposition: undefined,
};

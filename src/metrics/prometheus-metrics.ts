import cluster from 'node:cluster';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry, type CounterConfiguration } from 'prom-client';
import { workerExposition } from './cluster-metrics.ts';
import { HealthProbe } from './health-probe.ts';
import type { DnsMetricRcode, DnsMetricZone, HealthSources, PeerMetric, IntakeOutcome, LookupMetricKind, LookupResult, Metrics, MetricsExposition, RefusingLimit, RouteMetrics } from './metrics.ts';

/**
 * Latency buckets in seconds. Lookups answer in about 1 ms and single submissions in 5–15 ms
 * (the commit's fsync), so the fine buckets sit there; a batch of 1,000 events or a stalled
 * store reaches the coarse ones.
 */
const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** How long a scrape waits for the store's answer before it reports the store down. */
const STORE_PING_TIMEOUT_MS = 1000;

type Child = { inc(value?: number): void };

/**
 * The service's metrics in a prom-client registry of their own (docs/operations.md, "Metrics"),
 * with the process metrics prom-client collects by default (CPU, memory, event-loop lag, GC).
 * Series with a fixed set of labels are bound once here. Counters are tallied: a count is a
 * plain number added to per answer and handed to prom-client when a scrape collects, since
 * prom-client hashes and validates a series' labels on every `inc` (0.4–0.55 µs each in a loop
 * here, and a lookup or an event counts two).
 */
export class PrometheusMetrics implements Metrics {
  /** Every metric of this process. */
  readonly registry = new Registry();
  readonly exposition: MetricsExposition;
  private readonly requests: TalliedCounter<'route' | 'method' | 'status'>;
  private readonly latency: Histogram<'route' | 'method'>;
  private readonly routes = new Map<string, PrometheusRoute>();
  private readonly events: Record<'single' | 'batch', Record<IntakeOutcome, Child>>;
  private readonly lookupValues: Record<LookupMetricKind, Record<'single' | 'bulk', Record<LookupResult, Child>>>;
  private readonly issued: Child;
  private readonly refusals: TalliedCounter<'reason'>;
  private readonly refusalsByReason = new Map<string, Child>();
  private readonly limited: Record<RefusingLimit, Child>;
  private readonly dnsAnswers = new Map<string, Child>();
  private readonly dnsAnswerCounter: TalliedCounter<'zone' | 'rcode' | 'transport' | 'truncated'>;
  private readonly dnsLimitedBy: Record<'drop' | 'truncate', Child>;
  private readonly allowanceNotices: Record<string, Child>;

  constructor() {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    // 1 per process, so the primary's sum under WORKERS says how many workers a scrape covers.
    new Gauge({ name: 'tollwatch_processes', help: 'Serving processes whose counts this scrape sums: 1, or the workers under WORKERS', registers }).set(1);
    this.requests = new TalliedCounter({
      name: 'tollwatch_http_requests_total',
      help: 'HTTP answers by route pattern (unmatched for paths no route takes), method and status',
      labelNames: ['route', 'method', 'status'],
      registers,
    });
    this.latency = new Histogram({
      name: 'tollwatch_http_request_duration_seconds',
      help: 'Time from a request’s arrival to its answer’s end, by route pattern and method',
      labelNames: ['route', 'method'],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    const events = new TalliedCounter({
      name: 'tollwatch_events_ingested_total',
      help: 'Submitted events by outcome (created, replayed, conflict, invalid) and mode (single or batch)',
      labelNames: ['mode', 'outcome'],
      registers,
    });
    const outcomes = (mode: 'single' | 'batch') => bind(['created', 'replayed', 'conflict', 'invalid'], (outcome) => events.tally(mode, outcome));
    this.events = { single: outcomes('single'), batch: outcomes('batch') };
    const lookups = new TalliedCounter({
      name: 'tollwatch_lookups_total',
      help: 'Looked-up values by kind (phone, ip), mode (single, bulk: one per value) and result (found, not_found, invalid)',
      labelNames: ['kind', 'mode', 'result'],
      registers,
    });
    const results = (kind: LookupMetricKind, mode: 'single' | 'bulk') => bind(['found', 'not_found', 'invalid'], (result) => lookups.tally(kind, mode, result));
    this.lookupValues = {
      phone: { single: results('phone', 'single'), bulk: results('phone', 'bulk') },
      ip: { single: results('ip', 'single'), bulk: results('ip', 'bulk') },
    };
    this.issued = new TalliedCounter({ name: 'tollwatch_tokens_issued_total', help: 'Access tokens issued by the token endpoint', registers }).tally();
    this.refusals = new TalliedCounter({
      name: 'tollwatch_token_refusals_total',
      help: 'Token requests refused, by the RFC 6749 error answered (invalid_client, rate_limited, …)',
      labelNames: ['reason'],
      registers,
    });
    const limited = new TalliedCounter({
      name: 'tollwatch_rate_limited_total',
      help: 'Requests refused with 429, by limit: the plan allowances (lookups, submissions, event_reads) and the failed-authentication throttle (auth_failures)',
      labelNames: ['limit'],
      registers,
    });
    this.limited = bind(['lookups', 'submissions', 'event_reads', 'reports', 'auth_failures'], (limit) => limited.tally(limit));
    const notices = new TalliedCounter({
      name: 'tollwatch_allowance_notices_total',
      help: "Windows in which an account's plan allowance ran low (a tenth or less left) or was spent (a request refused), by group and level",
      labelNames: ['group', 'level'],
      registers,
    });
    this.allowanceNotices = bind(
      ['lookups low', 'lookups spent', 'submissions low', 'submissions spent', 'event_reads low', 'event_reads spent'],
      (key) => notices.tally(...(key.split(' ') as [string, string])),
    );
    this.dnsAnswerCounter = new TalliedCounter({
      name: 'tollwatch_dns_answers_total',
      help: 'DNS answers by zone (numbers, addresses, none), rcode, transport (udp, tcp) and whether they were truncated; never the names asked',
      labelNames: ['zone', 'rcode', 'transport', 'truncated'],
      registers,
    });
    const dnsLimited = new TalliedCounter({
      name: 'tollwatch_dns_rate_limited_total',
      help: 'DNS answers the response-rate limit dropped (drop) or sent truncated and empty instead (truncate)',
      labelNames: ['verdict'],
      registers,
    });
    this.dnsLimitedBy = bind(['drop', 'truncate'], (verdict) => dnsLimited.tally(verdict));
    // Each worker answers for itself only where there is one process; under WORKERS the
    // primary sums them all (cluster-metrics.ts says why).
    this.exposition = cluster.isWorker ? workerExposition(this.registry) : { contentType: this.registry.contentType, text: () => this.registry.metrics() };
  }

  route(pattern: string): RouteMetrics {
    let route = this.routes.get(pattern);
    if (!route) {
      route = new PrometheusRoute(pattern, this.requests, this.latency);
      this.routes.set(pattern, route);
    }
    return route;
  }

  eventsIngested(mode: 'single' | 'batch', outcome: IntakeOutcome, count = 1): void {
    if (count > 0) this.events[mode][outcome].inc(count);
  }

  lookups(kind: LookupMetricKind, mode: 'single' | 'bulk', result: LookupResult, count = 1): void {
    if (count > 0) this.lookupValues[kind][mode][result].inc(count);
  }

  tokenIssued(): void {
    this.issued.inc();
  }

  tokenRefused(reason: string): void {
    let child = this.refusalsByReason.get(reason);
    if (!child) {
      child = this.refusals.tally(reason);
      this.refusalsByReason.set(reason, child);
    }
    child.inc();
  }

  rateLimited(limit: RefusingLimit): void {
    this.limited[limit].inc();
  }

  allowanceNotice(group: 'lookups' | 'submissions' | 'event_reads', level: 'low' | 'spent'): void {
    this.allowanceNotices[`${group} ${level}`]!.inc();
  }

  dnsAnswered(zone: DnsMetricZone, rcode: DnsMetricRcode, transport: 'udp' | 'tcp', truncated: boolean): void {
    // Every label is one of a fixed set, so the series are at most 3 × 7 × 2 × 2.
    const key = `${zone} ${rcode} ${transport} ${truncated}`;
    let child = this.dnsAnswers.get(key);
    if (!child) {
      child = this.dnsAnswerCounter.tally(zone, rcode, transport, String(truncated));
      this.dnsAnswers.set(key, child);
    }
    child.inc();
  }

  dnsLimited(verdict: 'drop' | 'truncate'): void {
    this.dnsLimitedBy[verdict].inc();
  }

  watchHealth({ store, coordination, foldBacklog, foldLagMs, foldRowsKept, peers }: HealthSources): void {
    const registers = [this.registry];
    if (peers) watchPeers(peers, registers);
    if (foldRowsKept) {
      new Gauge({
        name: 'tollwatch_fold_rows_kept',
        help: 'Lookup-aggregate rows the fold keeps in memory so as not to read them back (at most 10,000 per table, about 0.8 KB each)',
        aggregator: 'sum',
        registers,
        collect() {
          this.set(foldRowsKept());
        },
      });
    }
    if (foldLagMs) {
      new Gauge({
        name: 'tollwatch_fold_lag_seconds',
        help: 'How long the oldest event stored and not yet folded into the lookup aggregates has waited (intake waits beyond 0.1 s)',
        aggregator: 'max',
        registers,
        collect() {
          this.set(foldLagMs() / 1000);
        },
      });
    }
    if (foldBacklog) {
      new Gauge({
        name: 'tollwatch_fold_backlog_events',
        help: 'Events stored but not yet folded into the lookup aggregates (lookups count them once folded; intake waits beyond 10,000, or past 0.1 s of lag)',
        aggregator: 'max',
        registers,
        collect() {
          this.set(foldBacklog());
        },
      });
    }
    const probe = new HealthProbe(store, STORE_PING_TIMEOUT_MS);
    new Gauge({
      name: 'tollwatch_store_up',
      help: `1 when the store answered a trivial query within ${STORE_PING_TIMEOUT_MS} ms at this scrape (the readiness check), else 0`,
      // Summed over workers this would count them; the cluster is down if any worker's store is.
      aggregator: 'min',
      registers,
      async collect() {
        this.set((await probe.answers()) ? 1 : 0);
      },
    });
    if (!coordination) return;
    new Gauge({
      name: 'tollwatch_coordination_up',
      help: '1 while Redis answers; 0 while rate limits count per instance and revocation notices wait for the cache bound',
      aggregator: 'min',
      registers,
      collect() {
        this.set(coordination() ? 1 : 0);
      },
    });
  }
}

/**
 * The series of one route pattern, bound per method and status as they first occur: a route
 * answers a handful of each, so after the first requests an answer is two map lookups.
 */
class PrometheusRoute implements RouteMetrics {
  private readonly pattern: string;
  private readonly requests: TalliedCounter<'route' | 'method' | 'status'>;
  private readonly latency: Histogram<'route' | 'method'>;
  private readonly byMethod = new Map<string, { latency: { observe(value: number): void }; byStatus: Map<number, Child> }>();

  constructor(pattern: string, requests: TalliedCounter<'route' | 'method' | 'status'>, latency: Histogram<'route' | 'method'>) {
    this.pattern = pattern;
    this.requests = requests;
    this.latency = latency;
  }

  answered(method: string, status: number, milliseconds: number): void {
    let series = this.byMethod.get(method);
    if (!series) {
      series = { latency: this.latency.labels(this.pattern, method), byStatus: new Map() };
      this.byMethod.set(method, series);
    }
    let count = series.byStatus.get(status);
    if (!count) {
      count = this.requests.tally(this.pattern, method, String(status));
      series.byStatus.set(status, count);
    }
    count.inc();
    series.latency.observe(milliseconds / 1000);
  }
}

/** One bound series per label value. */
function bind<K extends string>(values: readonly K[], child: (value: K) => Child): Record<K, Child> {
  const bound = {} as Record<K, Child>;
  for (const value of values) bound[value] = child(value);
  return bound;
}

/**
 * Each peer's counts and last success, read from the store at each scrape: every instance reads
 * the same rows, so under WORKERS the primary keeps one worker's value (`max`), never a sum.
 */
function watchPeers(peers: NonNullable<HealthSources['peers']>, registers: Registry[]): void {
  let read: Promise<PeerMetric[]> | undefined;
  // One read of the store per scrape, for all three metrics.
  // A store that does not answer leaves the peers out of this scrape; tollwatch_store_up says why.
  const current = () => (read ??= peers().catch(() => []).finally(() => setImmediate(() => (read = undefined))));
  new Counter({
    name: 'tollwatch_peer_objects_total',
    help: 'Objects read from each peer (docs/federation.md), by what became of them: read, accepted, skipped, refused',
    labelNames: ['peer', 'outcome'],
    aggregator: 'max',
    registers,
    async collect() {
      this.reset();
      for (const { name, status } of await current()) {
        this.inc({ peer: name, outcome: 'read' }, status.objectsRead);
        this.inc({ peer: name, outcome: 'accepted' }, status.objectsAccepted);
        this.inc({ peer: name, outcome: 'skipped' }, status.objectsSkipped);
        this.inc({ peer: name, outcome: 'refused' }, status.objectsRefused);
      }
    },
  });
  new Gauge({
    name: 'tollwatch_peer_last_success_timestamp_seconds',
    help: "When each peer's last poll succeeded (Unix time); 0 if none has",
    labelNames: ['peer'],
    aggregator: 'max',
    registers,
    async collect() {
      this.reset();
      for (const { name, status } of await current()) this.set({ peer: name }, status.lastSuccessAt ? Date.parse(status.lastSuccessAt) / 1000 : 0);
    },
  });
  new Gauge({
    name: 'tollwatch_peer_failures',
    help: 'Polls of each peer failed in a row since its last success',
    labelNames: ['peer'],
    aggregator: 'max',
    registers,
    async collect() {
      this.reset();
      for (const { name, status } of await current()) this.set({ peer: name }, status.failures);
    },
  });
}

/** A prom-client counter whose series are counted in tallies, handed to it when it is collected. */
class TalliedCounter<L extends string> {
  private readonly counter: Counter<L>;
  private readonly tallies: Tally[] = [];

  constructor(configuration: CounterConfiguration<L>) {
    const tallies = this.tallies;
    this.counter = new Counter({
      ...configuration,
      // Every read of the counter (a scrape, the cluster's gathering) collects first.
      collect() {
        for (const tally of tallies) tally.flush();
      },
    });
  }

  /** The tally of one series, exposed at 0 from now on, so that alerts and `rate()` see it before its first count. */
  tally(...values: string[]): Tally {
    const series = values.length ? this.counter.labels(...values) : this.counter;
    series.inc(0);
    const tally = new Tally(series);
    this.tallies.push(tally);
    return tally;
  }
}

/** A count kept as a plain number until its series is collected. */
class Tally implements Child {
  private readonly series: Child;
  private pending = 0;

  constructor(series: Child) {
    this.series = series;
  }

  inc(value = 1): void {
    this.pending += value;
  }

  flush(): void {
    if (this.pending === 0) return;
    this.series.inc(this.pending);
    this.pending = 0;
  }
}

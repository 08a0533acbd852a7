import type { onResponseHookHandler } from 'fastify';
import type { IntakeOutcome, LookupMetricKind, LookupResult, Metrics } from '../metrics/metrics.ts';

/**
 * What the event and lookup routes count. A single-value route is counted from the status it
 * answered, which the contract ties to the outcome (docs/api.md §5, §7): that one place sees a
 * result whichever step produced it (the handler, the domain's refusal, or a path value the
 * router could not read). A batch or bulk route is counted from its results, one per item.
 * Answers that are not about the value (401, 403, 413, 429, 503, …) count nothing here.
 */

const LOOKUP_RESULT_OF: Partial<Record<number, LookupResult>> = { 200: 'found', 404: 'not_found', 400: 'invalid' };

const INTAKE_OUTCOME_OF: Partial<Record<number, IntakeOutcome>> = { 201: 'created', 200: 'replayed', 409: 'conflict', 422: 'invalid' };

/** Counts a single lookup by the status it was answered, whichever path answered it. */
export function countLookup(metrics: Metrics, kind: LookupMetricKind, status: number): void {
  const result = LOOKUP_RESULT_OF[status];
  if (result) metrics.lookups(kind, 'single', result);
}

/** Counts a single event by the status it was answered, whichever path answered it. */
export function countSubmission(metrics: Metrics, status: number): void {
  const outcome = INTAKE_OUTCOME_OF[status];
  if (outcome) metrics.eventsIngested('single', outcome);
}

/** The onResponse hook of GET /api/phone-numbers/{…} or /api/ip-addresses/{…}. */
export function countLookupAnswer(metrics: Metrics, kind: LookupMetricKind): onResponseHookHandler {
  return (_request, reply, done) => {
    countLookup(metrics, kind, reply.statusCode);
    done();
  };
}

/** The onResponse hook of POST /api/events, and of an ingest URL's. */
export function countSubmissionAnswer(metrics: Metrics): onResponseHookHandler {
  return (_request, reply, done) => {
    countSubmission(metrics, reply.statusCode);
    done();
  };
}

/** Counts the values of a bulk lookup, each by its own result. */
export function countBulkLookup(metrics: Metrics, kind: LookupMetricKind, results: ReadonlyArray<{ found: boolean } | { error: string }>): void {
  let found = 0;
  let notFound = 0;
  for (const result of results) {
    if (!('found' in result)) continue;
    if (result.found) found++;
    else notFound++;
  }
  metrics.lookups(kind, 'bulk', 'found', found);
  metrics.lookups(kind, 'bulk', 'not_found', notFound);
  metrics.lookups(kind, 'bulk', 'invalid', results.length - found - notFound);
}

/** Counts the events of a batch by the outcome tallies its answer carries. */
export function countBatch(metrics: Metrics, tallies: Record<IntakeOutcome, number>): void {
  for (const outcome of ['created', 'replayed', 'conflict', 'invalid'] as const) metrics.eventsIngested('batch', outcome, tallies[outcome]);
}

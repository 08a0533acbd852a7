import type { IncomingMessage } from 'node:http';
import type { LookupService } from '../../domain/lookups/lookup-service.ts';
import type { RouteMetrics } from '../../metrics/metrics.ts';
import { admittedCaller, SPENT_BY_LANE, spendThen, writeAnswer, type DirectLane, type LaneServices, type Spent } from './direct-lanes.ts';
import { LOOKUP_ENDPOINTS, lookupAnswer, type LookupEndpoint } from './laned-endpoints.ts';
import { countLookup } from '../outcome-metrics.ts';

/** What the lane works with: the services the full pipeline's hooks and routes call. */
export interface DirectLookupsOptions extends LaneServices {
  lookups: LookupService;
}

/**
 * The lookups' direct lane (docs/architecture.md, "The direct lanes"): `GET
 * /api/phone-numbers/{n}` and `GET /api/ip-addresses/{a}` answered on the node:http request,
 * ahead of Fastify, from the same endpoint descriptions as their routes (laned-endpoints.ts),
 * when everything the `/api` pipeline would decide is already in memory: a bearer token this
 * process admitted before and whose revocation check still holds
 * (`ApiAuthenticator.admittedBearer`), its permission, the plan's allowance, and a lookup the
 * service answers found or not found. Anything else (no or unknown token, Basic credentials, a
 * query string, a body, a value the service refuses, an exhausted allowance, a store fault, a
 * closing server) goes to Fastify as it came, so every refusal, challenge, problem document and
 * failure count is the pipeline's own, written once.
 *
 * Why: a lookup is small (a map read, a counter, two primary-key probes or a cache hit), and
 * Fastify's per-request machinery (hook chain, promise per async hook, reply object, child
 * logger) costs several times that (docs/performance.md). `test/http/direct-lookups.test.ts`
 * holds its answers against the full pipeline's, byte for byte.
 *
 * The allowance is spent before the lookup, as the pipeline spends it before its handler. A
 * refusal spends nothing, so a refused request goes to Fastify, which refuses it again with
 * its 429. A lookup that throws after the allowance was spent (a value the service refuses, a
 * store fault) goes to Fastify marked `SPENT_BY_LANE`, so it is answered there without being
 * counted twice.
 */
export function directLookups(options: DirectLookupsOptions): DirectLane {
  const { limiter, lookups, metrics } = options;
  const served = LOOKUP_ENDPOINTS.map((endpoint) => ({ endpoint, route: metrics.route(endpoint.pattern) }));

  /**
   * The endpoint and value a request names, if the lane may take it by its request line and
   * headers: the value as Fastify's router reads it from the path, no query, no body.
   */
  function targetOf(request: IncomingMessage): { endpoint: LookupEndpoint; route: RouteMetrics; value: string } | undefined {
    const url = request.url!;
    if (request.method !== 'GET' || url.includes('?')) return undefined;
    const target = served.find(({ endpoint }) => url.startsWith(endpoint.prefix));
    if (!target) return undefined;
    // A body on a GET is Fastify's to judge.
    if (request.headers['content-length'] !== undefined || request.headers['transfer-encoding'] !== undefined) return undefined;
    let value: string | undefined;
    try {
      value = options.route('GET', url)?.params[target.endpoint.param];
    } catch {
      // A path the router cannot decode: Fastify's to refuse.
      return undefined;
    }
    return value === undefined ? undefined : { endpoint: target.endpoint, route: target.route, value };
  }

  return function lane(request, response, fallback) {
    const started = performance.now();
    const target = targetOf(request);
    const caller = target && admittedCaller(options, request, target.endpoint.permission);
    if (!target || !caller) return fallback(request, response);
    const { principal, plan } = caller;
    const { endpoint, route, value } = target;
    const answer = (spent: Spent) => {
      // The endpoint's answer in two steps, so that the lane waits on one promise, not two.
      endpoint
        .ask(lookups, principal.account, value)
        .then(
          (found) => {
            const answered = lookupAnswer(found);
            writeAnswer(options, { request, response, started, principal, route }, spent, answered);
            countLookup(metrics, endpoint.kind, answered.status);
          },
          () => {
            request[SPENT_BY_LANE] = spent.state;
            fallback(request, response);
          },
        )
        // Nothing above should throw; if it did, the connection is cut rather than left hanging.
        .catch(() => response.destroy());
    };
    spendThen(limiter, { group: endpoint.rateGroup, plan, accountId: principal.account.account_id }, answer, () => fallback(request, response), response);
  };
}

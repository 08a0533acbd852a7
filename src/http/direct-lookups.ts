import type { IncomingMessage } from 'node:http';
import type { Account } from '../domain/accounts.ts';
import type { IpAddressAnswer, PhoneNumberAnswer } from '../domain/lookup-answers.ts';
import type { LookupService } from '../domain/lookup-service.ts';
import type { Permission } from '../domain/permissions.ts';
import type { LimitState } from '../limits/plan-limiter.ts';
import type { LookupMetricKind, RouteMetrics } from '../metrics/metrics.ts';
import { admittedCaller, SPENT_BY_LANE, whenAllowed, type DirectLane, type LaneServices } from './direct-lanes.ts';
import { answerJson } from './lookup-serialiser.ts';
import { MAX_PATH_VALUE_LENGTH } from './malformed-path.ts';
import { PolicyFields, rateLimitField } from './rate-limit-headers.ts';

/** What the lane works with: the services the full pipeline's hooks and routes call. */
export interface DirectLookupsOptions extends LaneServices {
  lookups: LookupService;
}

interface Route {
  prefix: string;
  kind: LookupMetricKind;
  permission: Permission;
  metrics: RouteMetrics;
  answer(lookups: LookupService, account: Account, value: string): Promise<PhoneNumberAnswer | IpAddressAnswer>;
}

/**
 * The lookups' direct lane (docs/architecture.md, "The direct lane"): `GET
 * /api/phone-numbers/{n}` and `GET /api/ip-addresses/{a}` answered on the node:http request,
 * ahead of Fastify, by the same services the `/api` pipeline calls, when everything that
 * pipeline would decide is already in memory: a bearer token this process admitted before and
 * whose revocation check still holds (`ApiAuthenticator.admittedBearer`), its permission, the
 * plan's allowance, and a lookup the service answers found or not found. Anything else (no or
 * unknown token, Basic credentials, a query string, a body, a value the service refuses, an
 * exhausted allowance, a store fault, a closing server) goes to Fastify as it came, so every
 * refusal, challenge, problem document and failure count is the pipeline's own, written once.
 *
 * Why: a lookup is small (a map read, a counter, two primary-key probes or a cache hit), and
 * Fastify's per-request machinery (hook chain, promise per async hook, reply object, compiled
 * serializer, child logger) cost several times that (docs/performance.md). The answer is the
 * pipeline's to the byte but for JSON member order: the same headers, status, body members,
 * metrics and alerts, which `test/http/direct-lookups.test.ts` holds against the full pipeline.
 *
 * The allowance is spent before the lookup, as the pipeline spends it before its handler. A
 * refusal spends nothing, so a refused request goes to Fastify, which refuses it again with
 * its 429. A lookup that throws after the allowance was spent (a value the service refuses, a
 * store fault) goes to Fastify marked `SPENT_BY_LANE`, so it is answered there without being
 * counted twice.
 */
export function directLookups(options: DirectLookupsOptions): DirectLane {
  const { limiter, lookups, metrics, headers, activity, clientAddress } = options;
  const policies = new PolicyFields();
  const routes: Route[] = [
    {
      prefix: '/api/phone-numbers/',
      kind: 'phone',
      permission: 'read:phone-numbers',
      metrics: metrics.route('/api/phone-numbers/:phone_number'),
      answer: (service, account, value) => service.phoneNumber(account, value),
    },
    {
      prefix: '/api/ip-addresses/',
      kind: 'ip',
      permission: 'read:ip-addresses',
      metrics: metrics.route('/api/ip-addresses/:ip_address'),
      answer: (service, account, value) => service.ipAddress(account, value),
    },
  ];

  /** The route and path value a request names, if the lane may take it by its request line and headers. */
  function routeOf(request: IncomingMessage): { route: Route; value: string } | undefined {
    if (request.method !== 'GET') return undefined;
    const url = request.url!;
    const route = url.startsWith(routes[0]!.prefix) ? routes[0]! : url.startsWith(routes[1]!.prefix) ? routes[1]! : undefined;
    if (!route) return undefined;
    const raw = url.slice(route.prefix.length);
    // One path segment, no query, within the router's bound; a body on a GET is Fastify's to judge.
    if (raw.length === 0 || raw.length > MAX_PATH_VALUE_LENGTH || /[/?#]/.test(raw)) return undefined;
    if (request.headers['content-length'] !== undefined || request.headers['transfer-encoding'] !== undefined) return undefined;
    let value: string;
    try {
      value = raw.includes('%') ? decodeURIComponent(raw) : raw;
    } catch {
      return undefined;
    }
    return { route, value };
  }

  return function lane(request, response, fallback) {
    const started = performance.now();
    const target = routeOf(request);
    const caller = target && admittedCaller(options, request, target.route.permission);
    if (!target || !caller) return fallback(request, response);
    const { principal, plan } = caller;
    const account = principal.account;
    const allowance = limiter.spend('lookups', plan, account.account_id);
    if (!allowance) return fallback(request, response);
    const { window, state: spent } = allowance;
    const answer = (state: LimitState) => {
      target.route.answer(lookups, account, target.value).then(
        (found) => {
          const body = answerJson(found);
          const status = found.found ? 200 : 404;
          response.writeHead(status, {
            ...headers,
            'ratelimit-policy': policies.of('lookups', window),
            ratelimit: rateLimitField('lookups', state),
            'content-type': 'application/json; charset=utf-8',
            'content-length': Buffer.byteLength(body),
          });
          response.end(body);
          activity.called(principal.client.client_id, clientAddress(request));
          metrics.lookups(target.route.kind, 'single', found.found ? 'found' : 'not_found');
          target.route.metrics.answered('GET', status, performance.now() - started);
        },
        () => {
          request[SPENT_BY_LANE] = state;
          fallback(request, response);
        },
      )
        // Nothing above should throw; if it did, the connection is cut rather than left hanging.
        .catch(() => response.destroy());
    };
    whenAllowed(spent, answer, () => fallback(request, response), response);
  };
}

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ClientActivity } from '../../domain/accounts/client-activity.ts';
import type { Permission } from '../../domain/accounts/permissions.ts';
import type { Plan, PlanCatalog, RateWindow } from '../../domain/accounts/plans.ts';
import type { LimitGroup, LimitState, PlanLimiter } from '../../limits/plan-limiter.ts';
import type { Metrics, RouteMetrics } from '../../metrics/metrics.ts';
import type { ApiAuthenticator, Principal } from '../../oauth/api-authenticator.ts';
import { JSON_TYPE, type EndpointAnswer } from './laned-endpoints.ts';
import { PolicyFields, rateLimitField } from '../rate-limit-headers.ts';

/**
 * What the direct lanes (direct-lookups.ts, direct-intake.ts) share: the node:http handler they
 * stand in front of, the services they take from the `/api` pipeline, and how they admit a
 * request on what is already in memory (docs/architecture.md, "The direct lanes").
 */

/** The node:http request handler a lane stands in front of (Fastify's). */
export type RequestHandler = (request: IncomingMessage, response: ServerResponse) => void;

/** A lane: answers a request itself, or hands it to the handler behind it. */
export type DirectLane = (request: IncomingMessage, response: ServerResponse, fallback: RequestHandler) => void;

/** What every lane works with: the services the full pipeline's hooks call. */
export interface LaneServices {
  authenticator: ApiAuthenticator;
  plans: PlanCatalog;
  limiter: PlanLimiter;
  metrics: Metrics;
  /** Every header an `/api` answer carries whatever it says (security, version, cache). */
  headers: Record<string, string>;
  /** True once the server is closing: Fastify answers 503 then, so the lanes step aside. */
  closing: () => boolean;
  /** Told of each call a lane answers, as the pipeline's authentication tells it of its own. */
  activity: Pick<ClientActivity, 'called'>;
  /** The client's address, as Fastify's `request.ip` would read it (http/client-address.ts). */
  clientAddress: (request: IncomingMessage) => string;
  /** Fastify's router: the path parameters of the route a request names, as Fastify would read them; null when none. */
  route: (method: string, url: string) => { params: Record<string, string | undefined> } | null;
  /** Logs an answered request, when requests are logged (`LOG_LEVEL` info or below). */
  requestLog?: RequestLog;
}

/** Writes the one line a lane logs per answered request. */
export type RequestLog = (request: IncomingMessage, status: number, milliseconds: number) => void;

/**
 * A lane's request log over the process logger, when it logs at info: one `request completed`
 * line per answered request, with the request and status as Fastify logs its own (the same
 * serializers, so URLs are redacted alike), where Fastify writes an `incoming request` line too.
 */
export function laneRequestLog(
  logger: { isLevelEnabled?(level: string): boolean; info(fields: object, message: string): void } | undefined,
  clientAddress: (request: IncomingMessage) => string,
): RequestLog | undefined {
  // The process logger is pino's (logger.ts), which says whether it writes a level.
  if (!logger?.isLevelEnabled?.('info')) return undefined;
  let next = 0;
  return (request, status, milliseconds) =>
    logger.info(
      {
        reqId: `direct-${(next++).toString(36)}`,
        req: { method: request.method, url: request.url, headers: request.headers, host: request.headers.host, ip: clientAddress(request), socket: request.socket },
        res: { statusCode: status },
        responseTime: milliseconds,
      },
      'request completed',
    );
}

/** What a lane spent for a request, to write in its RateLimit fields. */
export interface Spent {
  group: LimitGroup;
  window: RateWindow;
  state: LimitState;
}

/** The RateLimit-Policy fields the lanes write, serialized once per plan window. */
const policies = new PolicyFields();

/**
 * A lane's answer, written as the pipeline writes it: the `/api` headers, the RateLimit fields
 * of what was spent, the endpoint's own headers and JSON; then told, counted and logged as the
 * pipeline's hooks would.
 */
export function writeAnswer(
  lane: LaneServices,
  exchange: { request: IncomingMessage; response: ServerResponse; started: number; principal: Principal; route: RouteMetrics },
  spent: Spent,
  answer: EndpointAnswer,
): void {
  const { request, response, started } = exchange;
  // One object of headers, built once per answer: this is every lane answer's path.
  response.writeHead(answer.status, {
    ...lane.headers,
    'ratelimit-policy': policies.of(spent.group, spent.window),
    ratelimit: rateLimitField(spent.group, spent.state),
    ...answer.headers,
    'content-type': JSON_TYPE,
    'content-length': Buffer.byteLength(answer.json),
  });
  response.end(answer.json);
  lane.activity.called(exchange.principal.client.client_id, lane.clientAddress(request));
  const milliseconds = performance.now() - started;
  exchange.route.answered(request.method!, answer.status, milliseconds);
  lane.requestLog?.(request, answer.status, milliseconds);
}

/**
 * A request whose allowance a lane spent before handing it to Fastify: the rate-limit hook
 * reads the state from here instead of spending it again (rate-limit-hook.ts).
 */
export const SPENT_BY_LANE = Symbol('tollwatch.spentByLane');

declare module 'node:http' {
  interface IncomingMessage {
    [SPENT_BY_LANE]?: LimitState;
  }
}

/**
 * Who is calling, if the pipeline's authentication would say so from memory alone: a bearer
 * token this process admitted before whose revocation check still holds (the same
 * `admittedBearer` as the pipeline's hook), with the permission, and a plan already loaded.
 * Undefined sends the request to the pipeline, which decides (and refuses) in full.
 */
export function admittedCaller(services: Pick<LaneServices, 'authenticator' | 'plans' | 'closing'>, request: IncomingMessage, permission: Permission): { principal: Principal; plan: Plan } | undefined {
  const authorization = request.headers.authorization;
  if (authorization === undefined || !authorization.startsWith('Bearer ') || services.closing()) return undefined;
  const principal = services.authenticator.admittedBearer(authorization.slice(7));
  if (!principal || !principal.permissions.has(permission)) return undefined;
  const plan = services.plans.loaded(principal.account.plan);
  return plan ? { principal, plan } : undefined;
}

/**
 * Spends one unit of the group's allowance for a request, as the pipeline's rate-limit hook
 * would, and goes on once it is known: with what was spent when allowed; no allowance for the
 * group, a refusal (which spent nothing) or a counter that failed hands the request over, for
 * the pipeline to spend and refuse in full.
 */
export function spendThen(
  limiter: PlanLimiter,
  charge: { group: LimitGroup; plan: Plan; accountId: string },
  proceed: (spent: Spent) => void,
  handOver: () => void,
  response: ServerResponse,
): void {
  const { group } = charge;
  const allowance = limiter.spend(group, charge.plan, charge.accountId);
  if (!allowance) return handOver();
  const decide = (state: LimitState) => (state.allowed ? proceed({ group, window: allowance.window, state }) : handOver());
  // Nothing in `proceed` should throw; if it did, the connection is cut rather than left hanging.
  // The counter's error is not handed on: a lane's hand-over may take an optional argument.
  if (allowance.state instanceof Promise) allowance.state.then(decide, () => handOver()).catch(() => response.destroy());
  else decide(allowance.state);
}

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ClientActivity } from '../domain/client-activity.ts';
import type { Permission } from '../domain/permissions.ts';
import type { Plan, PlanCatalog } from '../domain/plans.ts';
import type { LimitState, PlanLimiter } from '../limits/plan-limiter.ts';
import type { Metrics } from '../metrics/metrics.ts';
import type { ApiAuthenticator, Principal } from '../oauth/api-authenticator.ts';

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
 * Goes on with a request once the allowance a lane spent for it is known, as the pipeline's
 * rate-limit hook would: with its state when allowed; a refusal (which spent nothing) or a
 * counter that failed hands the request over, for the pipeline to spend and refuse in full.
 */
export function whenAllowed(spent: LimitState | Promise<LimitState>, proceed: (state: LimitState) => void, handOver: () => void, response: ServerResponse): void {
  const decide = (state: LimitState) => (state.allowed ? proceed(state) : handOver());
  // Nothing in `proceed` should throw; if it did, the connection is cut rather than left hanging.
  // The counter's error is not handed on: a lane's hand-over may take an optional argument.
  if (spent instanceof Promise) spent.then(decide, () => handOver()).catch(() => response.destroy());
  else decide(spent);
}

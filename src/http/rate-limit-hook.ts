import type { FastifyReply, FastifyRequest } from 'fastify';
import { serializeList } from 'structured-headers';
import type { Account } from '../domain/accounts.ts';
import { ServiceError } from '../domain/errors.ts';
import type { PlanCatalog } from '../domain/plans.ts';
import type { PlanLimiter } from '../limits/plan-limiter.ts';
import type { Metrics } from '../metrics/metrics.ts';

/**
 * The `/api` preHandler that spends a request's cost from its account's plan allowance and
 * answers with the RateLimit fields of draft-ietf-httpapi-ratelimit-headers-10 (docs/api.md
 * §9); over the limit it refuses with 429 `rate_limited`. It runs after authentication and
 * body parsing, so a batch is counted per event. The account is the `/api` principal's, unless
 * a scope that authenticates otherwise (ingest URLs) says whose it is.
 */
export function rateLimitHook(
  limiter: PlanLimiter,
  plans: PlanCatalog,
  metrics: Metrics,
  accountOf: (request: FastifyRequest) => Account | undefined = principalAccount,
) {
  return async function limit(request: FastifyRequest, reply: FastifyReply) {
    const { rateGroup, rateCost } = request.routeOptions.config;
    const account = accountOf(request);
    if (!rateGroup || !account) return;
    const plan = await plans.find(account.plan);
    const window = rateGroup === 'lookups' ? plan?.lookups : rateGroup === 'event_reads' ? plan?.eventReads : plan?.submissions;
    // No allowance for this group: the route itself refuses (e.g. plan_not_allowed).
    if (!window) return;
    const state = await limiter.consume(rateGroup, account.account_id, window, rateCost?.(request) ?? 1);
    // Structured fields naming the policy by its route group: the quota and window it grants,
    // and what remains of it with the seconds until it resets.
    reply
      .header('ratelimit-policy', serializeList([[rateGroup, new Map([['q', window.limit], ['w', window.windowSeconds]])]]))
      .header('ratelimit', serializeList([[rateGroup, new Map([['r', state.remaining], ['t', state.resetSeconds]])]]));
    if (!state.allowed) {
      metrics.rateLimited(rateGroup);
      reply.header('retry-after', state.resetSeconds);
      throw new ServiceError(
        'rate_limited',
        `the ${plan!.name} plan allows ${window.limit} ${rateGroup} per ${window.windowSeconds} s; retry after ${state.resetSeconds} s`,
      );
    }
  };
}

function principalAccount(request: FastifyRequest): Account | undefined {
  return request.principal?.account;
}

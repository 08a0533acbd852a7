import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Account } from '../domain/accounts/accounts.ts';
import { ServiceError } from '../domain/errors.ts';
import type { PlanCatalog } from '../domain/accounts/plans.ts';
import { allowanceOf, allowanceRefusal, type LimitGroup, type PlanLimiter } from '../limits/plan-limiter.ts';
import type { Metrics } from '../metrics/metrics.ts';
import { SPENT_BY_LANE } from './lanes/direct-lanes.ts';
import { PolicyFields, rateLimitField } from './rate-limit-headers.ts';

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
  const policies = new PolicyFields();
  return async function limit(request: FastifyRequest, reply: FastifyReply) {
    const { rateGroup, rateCost } = request.routeOptions.config;
    const account = accountOf(request);
    if (!rateGroup || !account) return;
    const plan = plans.loaded(account.plan) ?? (await plans.find(account.plan));
    // A request a direct lane admitted and then handed over has spent its allowance there.
    const handedOver = request.raw[SPENT_BY_LANE];
    const handedWindow = plan && handedOver ? allowanceOf(plan, rateGroup) : null;
    const spent = !plan ? undefined : handedOver && handedWindow ? { window: handedWindow, state: handedOver } : limiter.spend(rateGroup, plan, account.account_id, rateCost?.(request) ?? 1);
    // No allowance for this group: the route itself refuses (e.g. plan_not_allowed).
    if (!plan || !spent) return;
    const { window } = spent;
    const state = spent.state instanceof Promise ? await spent.state : spent.state;
    reply.header('ratelimit-policy', policies.of(rateGroup, window)).header('ratelimit', rateLimitField(rateGroup, state));
    if (!state.allowed) {
      metrics.rateLimited(rateGroup);
      reply.header('retry-after', state.resetSeconds);
      throw new ServiceError('rate_limited', allowanceRefusal(plan, rateGroup, window, state));
    }
  };
}

function principalAccount(request: FastifyRequest): Account | undefined {
  return request.principal?.account;
}

import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction, onResponseHookHandler } from 'fastify';
import { UNMATCHED_ROUTE, type Metrics, type RouteMetrics } from '../metrics/metrics.ts';

/**
 * Counts every answer by route pattern, method and status, with its latency. Call on the root
 * instance before any route registers.
 *
 * Each route gets an onResponse hook of its own as it registers, holding its pattern's
 * recorder: an answer then costs no lookup of its route (Fastify's `request.routeOptions`
 * builds a fresh object on every read). Paths no route takes are counted by one root hook under
 * a single `unmatched` label, so a scan of a million distinct paths adds no series.
 * `reply.elapsedTime` runs from the request's arrival to the end of the answer.
 */
export function countRequests(app: FastifyInstance, metrics: Metrics): void {
  app.addHook('onRoute', (route) => {
    const hook = answeredHook(metrics.route(route.url));
    const existing = route.onResponse;
    route.onResponse = existing === undefined ? [hook] : [...(Array.isArray(existing) ? existing : [existing]), hook];
  });
  const unmatched = metrics.route(UNMATCHED_ROUTE);
  app.addHook('onResponse', (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => {
    if (request.is404) unmatched.answered(request.method, reply.statusCode, reply.elapsedTime);
    done();
  });
}

/** A callback-style hook: an async one would allocate a promise per answer. */
function answeredHook(route: RouteMetrics): onResponseHookHandler {
  return (request, reply, done) => {
    route.answered(request.method, reply.statusCode, reply.elapsedTime);
    done();
  };
}

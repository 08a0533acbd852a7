import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Services } from '../../services.ts';
import { apiAuthHook, apiAuthOptions } from './api-auth.ts';
import { AllowedMethods } from '../allowed-methods.ts';
import { apiErrorHandler } from './api-errors.ts';
import { readBodiesAsJson } from '../json-body.ts';
import { LOOKUP_SCHEMAS } from './lookup-schemas.ts';
import { malformedPathHook } from '../malformed-path.ts';
import { replayLaneBody } from '../lanes/direct-intake.ts';
import { problem, sendProblem } from '../problem.ts';
import { rateLimitHook } from '../rate-limit-hook.ts';
import { securityHeaders } from '../security-headers.ts';
import { EVENT_BATCH_SCHEMAS, eventsBatchRoute } from './events-batch.ts';
import { EVENT_QUERY_SCHEMAS, eventsQueryRoutes } from './events-query.ts';
import { EventAcknowledgement, eventsSubmitRoute } from './events-submit.ts';
import { lookupRoutes } from './lookups.ts';
import { bulkLookupRoutes } from './lookups-bulk.ts';
import { FEED_SCHEMAS, feedRoutes } from './feeds.ts';
import { RANGE_LOOKUP_SCHEMAS, rangeLookupRoutes } from './range-lookups.ts';
import { INTEGRATION_SCHEMAS, integrationRoutes } from './integrations.ts';
import { ALLOWLIST_SCHEMAS, allowlistRoutes } from './allowlist.ts';
import { REPORT_SCHEMAS, reportRoutes } from './reports.ts';
import { FieldErrorSchema, HoneypotEventSchema, ProblemSchema, StoredEventSchema } from '../schemas.ts';

/** What an `/api` answer carries beyond every answer's security headers. Answers hold one account's private data: never stored by shared caches. */
const API_ONLY_HEADERS = { 'api-version': '1', 'cache-control': 'no-store' };

/** Headers on every `/api` answer, for an answer given without the hooks that set them. */
export function apiHeaders(): Record<string, string> {
  return { ...securityHeaders(), ...API_ONLY_HEADERS };
}

/**
 * What a scope answering as `/api` does (the `/api` scope and node ingest URLs alike): its
 * shared schemas, the version and cache headers first of all its onRequest hooks (the security
 * headers come before, from the application's), every body read as JSON, problem
 * details for anything thrown, and the methods of its routes learnt as they register, for its
 * 405s. Call it before the scope adds any hook of its own.
 */
export function apiConventions(app: FastifyInstance): AllowedMethods {
  for (const schema of [FieldErrorSchema, ProblemSchema, HoneypotEventSchema, EventAcknowledgement]) app.addSchema(schema);
  // The security headers were set by the application's first hook (app.ts), for every answer.
  app.addHook('onRequest', (_request, reply, done) => {
    reply.headers(API_ONLY_HEADERS);
    done();
  });
  readBodiesAsJson(app);
  app.setErrorHandler(apiErrorHandler);
  const allowed = new AllowedMethods();
  app.addHook('onRoute', allowed.record);
  return allowed;
}

/**
 * The `/api` scope. Routes declare what they need in their config (route-config.ts); these
 * hooks act on it, for every request, in the order and with the numbers of docs/architecture.md
 * ("An `/api` request, in order"): 1 the headers, 2 authentication and permission, 3 the
 * submission plan, 4 body parsing (a body a direct lane read is replayed), 5 unreadable path
 * values, 6 no schema validation, 7 the allowance, 8 the handler and its errors, 9 metrics.
 */
export async function apiScope(app: FastifyInstance, { services }: { services: Services }) {
  const allowed = apiConventions(app);
  // Every request and answer body is a named schema, registered here, at the scope's root, where
  // every route's `$ref` finds it.
  for (const schema of [StoredEventSchema, ...EVENT_QUERY_SCHEMAS, ...EVENT_BATCH_SCHEMAS, ...LOOKUP_SCHEMAS, ...RANGE_LOOKUP_SCHEMAS, ...FEED_SCHEMAS, ...INTEGRATION_SCHEMAS, ...ALLOWLIST_SCHEMAS, ...REPORT_SCHEMAS]) {
    app.addSchema(schema);
  }
  app.addHook('onRequest', apiAuthHook(apiAuthOptions(services)));
  app.addHook('onRequest', (request, _reply, done) => {
    // Permission before content (docs/api.md §5): 403 whatever the body, never a 400 or 422
    // about a body this account may not send at all. Without a principal, step 2 has answered.
    if (!request.principal || !request.routeOptions.config.submission) return done();
    services.intake.assertMaySubmit(request.principal.account).then(() => done(), done);
  });
  // A body the intake lane read before handing its request over (direct-intake.ts).
  app.addHook('preParsing', replayLaneBody);
  app.addHook('preValidation', malformedPathHook);
  app.addHook('preHandler', rateLimitHook(services.limiter, services.plans, services.metrics));
  app.setNotFoundHandler(
    (request: FastifyRequest, reply: FastifyReply) => allowed.refuseOtherMethod(request, reply) ?? sendProblem(reply, problem('not_found', 'no such resource')),
  );

  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  await app.register(eventsSubmitRoute, { services });
  await app.register(eventsQueryRoutes, { services });
  await app.register(lookupRoutes, { services });
  await app.register(eventsBatchRoute, { services });
  await app.register(bulkLookupRoutes, { services });
  await app.register(rangeLookupRoutes, { services });
  await app.register(feedRoutes, { services });
  await app.register(integrationRoutes, { services });
  await app.register(allowlistRoutes, { services });
  await app.register(reportRoutes, { services });
}

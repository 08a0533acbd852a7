import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Services } from '../services.ts';
import { apiAuthHook, apiAuthOptions } from './api-auth.ts';
import { AllowedMethods } from './allowed-methods.ts';
import { apiErrorHandler } from './api-errors.ts';
import { readBodiesAsJson } from './json-body.ts';
import { malformedPathHook } from './malformed-path.ts';
import { problem, sendProblem } from './problem.ts';
import { rateLimitHook } from './rate-limit-hook.ts';
import { securityHeaders } from './security-headers.ts';
import { eventsBatchRoute } from './routes/events-batch.ts';
import { eventsQueryRoutes } from './routes/events-query.ts';
import { eventsSubmitRoute } from './routes/events-submit.ts';
import { lookupRoutes } from './routes/lookups.ts';
import { bulkLookupRoutes } from './routes/lookups-bulk.ts';
import { HoneypotEventSchema, Problem, StoredEventSchema } from './schemas.ts';

/** Headers on every `/api` answer. Answers hold one account's private data: never stored by shared caches. */
export function apiHeaders(): Record<string, string> {
  return { ...securityHeaders(), 'api-version': '1', 'cache-control': 'no-store' };
}

/** The `/api` scope: version header, authentication, JSON bodies, problem details. */
export async function apiScope(app: FastifyInstance, { services }: { services: Services }) {
  app.addSchema(Problem);
  app.addSchema(HoneypotEventSchema);
  app.addSchema(StoredEventSchema);

  const headers = apiHeaders();
  app.addHook('onRequest', async (_request, reply) => {
    reply.headers(headers);
  });
  app.addHook('onRequest', apiAuthHook(apiAuthOptions(services)));
  app.addHook('preValidation', malformedPathHook);
  app.addHook('preHandler', rateLimitHook(services.limiter, services.plans));

  readBodiesAsJson(app);

  app.setErrorHandler(apiErrorHandler);
  // Routes are learnt as they register below: a known path asked with another method is 405.
  const allowed = new AllowedMethods();
  app.addHook('onRoute', allowed.record);
  app.setNotFoundHandler((request: FastifyRequest, reply: FastifyReply) => {
    const methods = allowed.at((request.raw.url ?? '').split('?')[0]!);
    if (methods.length === 0) return sendProblem(reply, problem('not_found', 'no such resource'));
    reply.header('allow', methods.join(', '));
    return sendProblem(reply, problem('method_not_allowed', `${request.method} is not taken here; this path takes ${methods.join(', ')}`));
  });

  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  await app.register(eventsSubmitRoute, { services });
  await app.register(eventsQueryRoutes, { services });
  await app.register(lookupRoutes, { services });
  await app.register(eventsBatchRoute, { services });
  await app.register(bulkLookupRoutes, { services });
}

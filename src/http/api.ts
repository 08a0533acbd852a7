import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Services } from '../services.ts';
import { apiAuthHook } from './api-auth.ts';
import { apiErrorHandler } from './api-errors.ts';
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

/** Media types whose body is read as JSON: what `curl -d '{…}'` and bare clients send (CONTRACT §5). */
const JSON_LIKE = new Set(['application/json', 'text/plain', 'application/x-www-form-urlencoded']);

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
  app.addHook(
    'onRequest',
    apiAuthHook({
      authenticator: services.authenticator,
      basicAuth: services.config.basicAuth,
      failures: services.authFailures,
      audit: services.audit,
    }),
  );
  app.addHook('preValidation', malformedPathHook);
  app.addHook('preHandler', rateLimitHook(services.limiter, services.plans));

  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string' }, (request, body, done) => {
    const mediaType = (request.headers['content-type'] ?? 'application/json').split(';')[0]!.trim().toLowerCase();
    if (!JSON_LIKE.has(mediaType)) {
      const error = Object.assign(new Error('unsupported media type'), { code: 'FST_ERR_CTP_INVALID_MEDIA_TYPE', statusCode: 415 });
      return done(error, undefined);
    }
    if (body === '') return done(Object.assign(new Error('empty body'), { code: 'FST_ERR_CTP_EMPTY_JSON_BODY', statusCode: 400 }), undefined);
    parseJson(request, body as string, done);
  });

  app.setErrorHandler(apiErrorHandler);
  app.setNotFoundHandler((_request: FastifyRequest, reply: FastifyReply) =>
    sendProblem(reply, problem('not_found', 'no such resource')),
  );

  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  await app.register(eventsSubmitRoute, { services });
  await app.register(eventsQueryRoutes, { services });
  await app.register(lookupRoutes, { services });
  await app.register(eventsBatchRoute, { services });
  await app.register(bulkLookupRoutes, { services });
}

import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ServiceError } from '../../domain/errors.ts';
import type { Services } from '../../services.ts';
import { apiAuthOptions, apiGate } from '../api/api-auth.ts';
import { AllowedMethods } from '../allowed-methods.ts';
import { faultClass, UNAVAILABLE_RETRY_SECONDS } from '../fault-class.ts';
import { problem, serverProblem } from '../problem.ts';
import { rateLimitHook } from '../rate-limit-hook.ts';
import { taxiiRoutes } from './taxii.ts';
import { acceptsTaxii, sendTaxiiError, TAXII_MEDIA_TYPE, TAXII_SCHEMAS } from './taxii-answers.ts';

/**
 * The TAXII 2.1 server under `/taxii2/` (docs/taxii.md). Its hooks, in order, for every request:
 *
 * 1. onRequest: no caching by shared caches; authentication, Basic with a client's id and
 *    secret or a bearer token, as `/api` does (api-auth.ts), refusals in TAXII's error resource;
 *    then the Accept field (406 unless it admits `application/taxii+json;version=2.1`).
 * 2. preHandler: reads of a collection spend one unit of the lookups allowance, as a feed does,
 *    with the RateLimit fields (rate-limit-hook.ts).
 * 3. the handler; anything thrown becomes an error resource, never a stack or a 500 for a store
 *    that is down (503 with Retry-After).
 *
 * Paths without their trailing slash (TAXII 2.1 §3.1 wants one) are redirected to it (308).
 */
export async function taxiiScope(app: FastifyInstance, { services }: { services: Services }) {
  for (const schema of TAXII_SCHEMAS) app.addSchema(schema);
  const allowed = new AllowedMethods();
  app.addHook('onRoute', allowed.record);
  app.addHook('onRequest', (_request, reply, done) => {
    reply.header('cache-control', 'no-store');
    done();
  });
  const admit = apiGate(apiAuthOptions(services), sendTaxiiError);
  app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    if (request.is404 === true && !request.url.split('?')[0]!.endsWith('/')) return;
    const principal = await admit(request, reply, undefined);
    if (!principal) return reply;
    request.principal = principal;
    services.clientActivity.called(principal.client.client_id, request.ip);
    if (!acceptsTaxii(request.headers.accept)) return sendTaxiiError(reply, problem('not_acceptable', 'send Accept: application/taxii+json;version=2.1'));
  });
  app.addHook('preHandler', rateLimitHook(services.limiter, services.plans, services.metrics));
  // Exactly the media type TAXII names (§1.6.8): Fastify would add `; charset=utf-8` and quote
  // the version, which taxii2client's check of `version=2.1` does not read.
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (String(reply.getHeader('content-type') ?? '').startsWith('application/taxii+json')) reply.header('content-type', TAXII_MEDIA_TYPE);
    done(null, payload);
  });
  app.setErrorHandler(taxiiErrorHandler);
  app.setNotFoundHandler((request: FastifyRequest, reply: FastifyReply) => {
    const [path, query] = splitUrl(request.url);
    if (!path.endsWith('/')) return reply.code(308).header('location', `${path}/${query}`).send();
    const methods = allowed.at(path);
    if (methods.length > 0 && !methods.includes(request.method)) {
      reply.header('allow', methods.join(', '));
      return sendTaxiiError(reply, problem('method_not_allowed', `${request.method} is not taken here; this path takes ${methods.join(', ')}`));
    }
    return sendTaxiiError(reply, problem('not_found', 'no such TAXII resource'));
  });
  await app.register(taxiiRoutes, { services });
}

/** Anything a TAXII route throws, as an error resource (§3.6.1). A malformed parameter is 400 (§3.4), not /api's 422. */
function taxiiErrorHandler(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  if (error instanceof ServiceError) {
    const refusal = problem(error.code, error.message, error.errors);
    return sendTaxiiError(reply, error.code === 'validation_failed' ? { ...refusal, status: 400, title: 'Bad request' } : refusal);
  }
  const fault = faultClass(error);
  if (fault.kind === 'client') return sendTaxiiError(reply, { status: fault.status, title: 'Bad request', detail: 'the request could not be read', error: 'validation_failed' });
  if (fault.kind === 'unavailable') {
    request.log.warn({ err: error }, 'store unavailable');
    reply.header('retry-after', UNAVAILABLE_RETRY_SECONDS);
    return sendTaxiiError(reply, problem('unavailable', 'the service cannot reach its store just now; retry shortly'));
  }
  request.log.error({ err: error }, 'unhandled error');
  return sendTaxiiError(reply, serverProblem());
}

function splitUrl(url: string): [string, string] {
  const at = url.indexOf('?');
  return at < 0 ? [url, ''] : [url.slice(0, at), url.slice(at)];
}

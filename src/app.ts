import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import Fastify, { type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest, type FastifyServerOptions } from 'fastify';
import { apiScope } from './http/api.ts';
import { problem, sendProblem } from './http/problem.ts';
import { operationalRoutes } from './http/routes/operational.ts';
import { tokenEndpoint } from './oauth/token-endpoint.ts';
import type { Services } from './services.ts';

export interface AppOptions {
  /** The process logger; no logging when absent (tests). */
  loggerInstance?: FastifyServerOptions['loggerInstance'];
}

/** Builds the HTTP application over a set of services; `server.ts` makes it listen. */
export async function buildApp(services: Services, options: AppOptions = {}): Promise<FastifyInstance> {
  const app = Fastify({
    ...(options.loggerInstance ? { loggerInstance: options.loggerInstance } : { logger: false }),
    // Slow clients must not hold connections forever: the whole request, headers included,
    // must arrive within the request timeout, and an idle socket is closed after it.
    connectionTimeout: services.config.requestTimeoutMs,
    requestTimeout: services.config.requestTimeoutMs,
    keepAliveTimeout: 72_000,
    http: { headersTimeout: Math.min(services.config.requestTimeoutMs, 10_000) },
    bodyLimit: 128 * 1024,
    routerOptions: { maxParamLength: 512 },
    return503OnClosing: true,
    // Behind a proxy the socket address is the proxy's: the failure throttle and the audit
    // trail need the client's, read from X-Forwarded-For of the proxies named here only.
    trustProxy: services.config.trustProxy ?? false,
    ajv: { customOptions: { allErrors: true, coerceTypes: true, removeAdditional: false } },
    frameworkErrors: badUrlAnswer,
  });

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Tollwatch API',
        version: '1',
        description:
          'Honeypot event intake and phone-number lookups against SIP toll fraud. Authenticate with an OAuth2 client-credentials token from /oauth/token.',
      },
      servers: [{ url: services.config.publicUrl }],
      components: {
        securitySchemes: {
          bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
          basic: { type: 'http', scheme: 'basic' },
        },
      },
      security: [{ bearer: [] }, { basic: [] }],
    },
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => String(json.$id ?? `def-${i}`) },
  });

  await app.register(operationalRoutes, { services });
  await app.register(tokenEndpoint, { services });
  await app.register(apiScope, { prefix: '/api', services });
  await app.register(swaggerUi, { routePrefix: '/docs' });
  app.server.maxConnections = services.config.maxConnections;
  return app;
}

/**
 * A path the router cannot even decode (e.g. a lone `%`) never reaches a route scope; under
 * `/api` it still gets a problem document, naming the value that was malformed.
 */
function badUrlAnswer(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  const url = request.raw.url ?? '';
  if (!url.startsWith('/api/')) return reply.code(400).send({ error: 'bad_request', message: 'malformed URL' });
  reply.header('api-version', '1');
  if (url.startsWith('/api/phone-numbers/')) return sendProblem(reply, problem('invalid_phone_number', 'the phone number in the path is not valid URL encoding'));
  if (url.startsWith('/api/ip-addresses/')) return sendProblem(reply, problem('invalid_ip_address', 'the address in the path is not valid URL encoding'));
  return sendProblem(reply, problem('not_found', 'no such resource'));
}

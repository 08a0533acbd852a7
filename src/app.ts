import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { apiScope } from './http/api.ts';
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
    ajv: { customOptions: { allErrors: true, coerceTypes: true, removeAdditional: false } },
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

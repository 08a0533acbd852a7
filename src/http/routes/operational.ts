import type { FastifyInstance } from 'fastify';
import type { Services } from '../../services.ts';

/** Unauthenticated operational endpoints (docs/api.md §1): health, JWKS, AS metadata. */
export async function operationalRoutes(app: FastifyInstance, { services }: { services: Services }) {
  const { config, database } = services;

  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }));

  app.get('/readyz', { schema: { hide: true } }, async (request, reply) => {
    try {
      await database.ping();
      return { status: 'ready' };
    } catch (err) {
      request.log.warn({ err }, 'readiness check failed');
      return reply.code(503).header('retry-after', '5').send({ status: 'unavailable' });
    }
  });

  app.get('/.well-known/jwks.json', { schema: { hide: true } }, async (_request, reply) => {
    reply.header('cache-control', 'public, max-age=300');
    return services.tokens.jwks();
  });

  // RFC 8414 metadata: what a client library needs to find the token endpoint and keys.
  app.get('/.well-known/oauth-authorization-server', { schema: { hide: true } }, async () => ({
    issuer: config.issuer,
    token_endpoint: `${config.publicUrl}/oauth/token`,
    jwks_uri: `${config.publicUrl}/.well-known/jwks.json`,
    grant_types_supported: ['client_credentials'],
    // Secret-based client authentication only. No *_signing_alg_values_supported: that lists
    // algorithms for JWT client authentication (private_key_jwt, client_secret_jwt), which we
    // do not accept; ES256 signs our access tokens, which the JWKS already tells.
    token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
    // RFC 8414 requires this member, and response types belong to the authorization endpoint,
    // which a client-credentials-only server does not have: the truthful list is empty. The
    // `token` we used to list is the implicit grant, which we never supported.
    response_types_supported: [],
    scopes_supported: ['write:events', 'read:events', 'read:phone-numbers', 'read:ip-addresses'],
    service_documentation: `${config.publicUrl}/docs`,
  }));
}

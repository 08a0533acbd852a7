import type { FastifyInstance } from 'fastify';
import { PERMISSIONS } from '../../domain/accounts/permissions.ts';
import type { Services } from '../../services.ts';

/** What these routes use of the services. */
type RouteServices = Pick<Services, 'config' | 'database' | 'tokens'>;

/**
 * Where the RFC 9728 metadata of the `/api` resource is served: the well-known path with the
 * resource's path appended (RFC 9728 §3.1), named in every 401 challenge of `/api`.
 */
export function protectedResourceMetadataUrl(publicUrl: string): string {
  return `${publicUrl}/.well-known/oauth-protected-resource/api`;
}

/** Unauthenticated operational endpoints (docs/api.md §1): health, JWKS, AS and resource metadata. */
export async function operationalRoutes(app: FastifyInstance, { services }: { services: RouteServices }) {
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
    // which a client-credentials-only server does not have: the truthful list is empty (`token`
    // would name the implicit grant, which we do not support).
    response_types_supported: [],
    scopes_supported: [...PERMISSIONS],
    service_documentation: `${config.publicUrl}/docs`,
  }));

  // RFC 9728 metadata of the API: the audience a token should name (the default one when a
  // token request names none) and where to get one. Served at the root well-known path too,
  // for clients that look only there.
  const resourceMetadata = () => ({
    resource: services.tokens.defaultAudience,
    authorization_servers: [config.issuer],
    scopes_supported: [...PERMISSIONS],
    bearer_methods_supported: ['header'],
    resource_documentation: `${config.publicUrl}/docs`,
  });
  app.get('/.well-known/oauth-protected-resource/api', { schema: { hide: true } }, async () => resourceMetadata());
  app.get('/.well-known/oauth-protected-resource', { schema: { hide: true } }, async () => resourceMetadata());
}

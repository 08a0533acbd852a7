import type { SwaggerOptions } from '@fastify/swagger';
import { PERMISSIONS, type Permission } from '../domain/accounts/permissions.ts';
import type { Services } from '../services.ts';
import { liftRequiredHeaders } from './route-responses.ts';

/** What each permission lets a token do, as the OAuth2 scopes of the document say it. */
const SCOPE_DESCRIPTIONS: Record<Permission, string> = {
  'write:events': 'Submit honeypot events (Contributor Plan)',
  'read:events': "Read the account's own events",
  'read:phone-numbers': 'Look up phone numbers',
  'read:ip-addresses': 'Look up source addresses',
  'manage:integrations': "Manage where the account's alerts are sent (webhooks, Slack, email) and read their delivery log",
  'manage:allowlist': "Manage the account's allowlist: numbers, prefixes, addresses and ranges its lookups mark allowlisted and its call guard lets through",
  'write:reports': 'Report a lookup answer as a false positive, and list the account’s reports and their state',
};

/**
 * The OpenAPI 3.1 document's frame (docs/api.md §1): the API's identity and licence, how to
 * authenticate (a bearer token as such; OAuth2 client credentials with the token URL and scopes,
 * so "Authorize" in /docs and code generators can fetch tokens; Basic while accepted), and on
 * every operation the security its route's permission asks for. The operations themselves come
 * from the route schemas, every request and answer body a named schema (`$id`, registered by
 * its scope), so generated clients get our names rather than ones made of an operation and a status.
 */
export function openApiOptions(services: Services): SwaggerOptions {
  const { config } = services;
  return {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Tollwatch API',
        version: '1',
        description:
          'Honeypot event intake and phone-number lookups against SIP toll fraud. Authenticate with an OAuth2 client-credentials token from /oauth/token; a node ingest URL (/ingest/{secret}) carries its own credential in its path. Errors are RFC 9457 problem documents whose `type` leads to /problems.',
        license: { name: 'AGPL-3.0-only', identifier: 'AGPL-3.0-only' },
      },
      servers: [{ url: config.publicUrl }],
      // What the API accepts as a whole, Basic last and only while enabled; every operation
      // overrides it with its own (securityFor), which is what clients act on.
      security: [{ bearer: [] }, { oauth2: [] }, ...(config.basicAuth ? [{ basic: [] }] : [])],
      tags: [
        { name: 'events', description: 'Submitting honeypot events and reading one’s own back' },
        { name: 'lookups', description: 'Have attackers tried this number or address?' },
        { name: 'oauth', description: 'Access tokens' },
        { name: 'integrations', description: "Where the account's alerts go: signed webhooks, Slack, confirmed email addresses" },
        { name: 'allowlist', description: "The account's own allowlist: what is its own and never to be blocked" },
        { name: 'reports', description: 'False-positive reports of lookup answers, reviewed by the operator (docs/scoring.md, "Reports")' },
        { name: 'taxii', description: 'TAXII 2.1: the indicators as collections security platforms subscribe to (docs/taxii.md); answers in application/taxii+json;version=2.1' },
      ],
      components: {
        securitySchemes: {
          oauth2: {
            type: 'oauth2',
            description: 'Client credentials from the account owner; the audience defaults to this API',
            flows: { clientCredentials: { tokenUrl: `${config.publicUrl}/oauth/token`, scopes: SCOPE_DESCRIPTIONS } },
          },
          bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'An access token from /oauth/token' },
          ...(config.basicAuth ? { basic: { type: 'http', scheme: 'basic', description: BASIC_DESCRIPTION } } : {}),
        },
      },
    },
    transform: ({ schema, url, route }) => {
      const permission = route.config?.permission;
      if (!permission || !schema || (schema as { hide?: boolean }).hide) return { schema, url };
      return { schema: { ...schema, security: securityFor(permission) }, url };
    },
    transformObject: (documentObject) => {
      const document = 'openapiObject' in documentObject ? documentObject.openapiObject : documentObject.swaggerObject;
      liftRequiredHeaders(document as Parameters<typeof liftRequiredHeaders>[0]);
      return document;
    },
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => String(json.$id ?? `def-${i}`) },
  };
}

/**
 * Basic is accepted wherever a token is, but only the document's own `security` names it, no
 * operation: @hey-api/openapi-ts (0.99) applies every scheme an operation lists, in order, each
 * overwriting the Authorization header, so with Basic listed last its clients sent the token as
 * Basic; listed first, tools that take the first alternative (Scalar) would pick it.
 */
const BASIC_DESCRIPTION =
  'The client id and secret themselves (docs/api.md §3), accepted by every operation that takes a bearer token while Basic is enabled. Operations list only the token, so that generated clients send it as Bearer';

/**
 * The ways to call an operation that needs a permission: a bearer token, first, as generators
 * pick the first alternative and readers read it; then OAuth2 with the permission as its scope,
 * which is the same token fetched from the token URL and the one place the document says which
 * permission the operation needs. hey-api sends both as `Authorization: Bearer`; orval and
 * openapi-typescript leave the header to the caller (test/conformance/openapi-generators.test.ts).
 */
function securityFor(permission: Permission): Array<Record<string, string[]>> {
  if (!PERMISSIONS.includes(permission)) throw new Error(`unknown permission ${permission}`);
  return [{ bearer: [] }, { oauth2: [permission] }];
}

import formbody from '@fastify/formbody';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AuditEntry } from '../domain/audit.ts';
import { securityHeaders } from '../http/security-headers.ts';
import type { Services } from '../services.ts';
import { isStoreUnavailable } from '../store/store-errors.ts';
import { accountFailure, readBasicCredentials, verifyClientSecret, type ClientCredentials, type ClientVerdict } from './client-authentication.ts';
import { invalidClient, invalidRequest, invalidTarget, OAuthError, unsupportedGrantType } from './oauth-errors.ts';
import { tokenRouteSchema } from './token-schema.ts';

interface TokenRequest {
  grantType: string;
  audience: string;
  /** Undefined when HTTP Basic credentials were sent but cannot be read. */
  credentials: ClientCredentials | undefined;
}

const TOKEN_BODY_LIMIT = 8 * 1024;

/**
 * POST /oauth/token: the client-credentials grant (docs/api.md §2), as a list of small steps:
 * no-store, read the body, find the credentials, check the grant, authenticate (failures are
 * counted, slowed, then refused with 429), check the audience, issue.
 */
export async function tokenEndpoint(app: FastifyInstance, { services }: { services: Services }) {
  await app.register(formbody, { bodyLimit: TOKEN_BODY_LIMIT });
  const headers = securityHeaders();
  app.addHook('onRequest', async (_request, reply) => {
    reply.headers(headers);
  });
  app.setErrorHandler(oauthErrorHandler);

  app.post(
    '/oauth/token',
    {
      bodyLimit: TOKEN_BODY_LIMIT,
      schema: tokenRouteSchema,
      // The schema documents; it must not validate, coerce or reshape (see token-schema.ts).
      validatorCompiler: () => () => true,
      serializerCompiler: () => (data: unknown) => JSON.stringify(data),
    },
    async (request: FastifyRequest, reply: FastifyReply) => {
      reply.header('cache-control', 'no-store').header('pragma', 'no-cache');
      const tokenRequest = readTokenRequest(request);
      // Unreadable Basic credentials are a failed authentication, whatever else the body says.
      if (!tokenRequest.credentials) return refuse(services, request, reply, { reason: 'unreadable credentials' });
      if (tokenRequest.grantType !== 'client_credentials') throw unsupportedGrantType();
      const { clientId } = tokenRequest.credentials;
      // Credentials first: valid ones get their token whatever failed before from this address
      // or for this client id; only a failure is counted, slowed, then refused.
      const verdict = await authenticateClient(services, tokenRequest.credentials);
      if (!verdict.ok) return refuse(services, request, reply, { clientId, ...verdict.subject, reason: verdict.reason });
      const { client, account } = verdict;
      if (!services.tokens.acceptsAudience(tokenRequest.audience)) {
        // Not an authentication failure (the credentials were good), so not counted; but a
        // client asking for the wrong audience is worth a line for its operator.
        recordAudit(services, request, {
          action: 'token.refused',
          actor: `client:${client.client_id}`,
          accountId: account.account_id,
          clientId: client.client_id,
          ip: request.ip,
          detail: { reason: 'invalid_target', audience: tokenRequest.audience },
        });
        throw invalidTarget();
      }
      const accessToken = await services.tokens.issue({
        clientId: client.client_id,
        accountId: account.account_id,
        permissions: client.permissions,
        secretVersion: client.secret_version,
        audience: tokenRequest.audience,
      });
      await services.audit.record({
        action: 'token.issued',
        actor: `client:${client.client_id}`,
        accountId: account.account_id,
        clientId: client.client_id,
        ip: request.ip,
        detail: { audience: tokenRequest.audience },
      });
      return {
        access_token: accessToken,
        token_type: 'Bearer',
        expires_in: services.tokens.ttlSeconds,
        scope: client.permissions.join(' '),
      };
    },
  );
}

/**
 * Answers a failed client authentication, counted and audited as every failure is (see
 * client-authentication.ts): 429 once refused, else 401 `invalid_client` after its delay.
 */
async function refuse(
  services: Services,
  request: FastifyRequest,
  reply: FastifyReply,
  { clientId, accountId, reason }: { clientId?: string; accountId?: string; reason: string },
): Promise<never> {
  const failure: AuditEntry & { ip: string } = { action: 'token.refused', actor: 'anonymous', clientId, accountId, ip: request.ip, detail: { reason } };
  const answer = await accountFailure({ failures: services.authFailures, audit: services.audit, log: request.log }, failure);
  if (answer.refused) {
    reply.header('retry-after', answer.retryAfterSeconds);
    throw new OAuthError(429, 'rate_limited', 'too many failed authentications; retry later');
  }
  throw invalidClient();
}

/** Writes an audit row without waiting: the answer must not wait for the audit table. */
function recordAudit(services: Services, request: FastifyRequest, entry: AuditEntry): void {
  services.audit.record(entry).catch((err: unknown) => request.log.warn({ err }, 'audit write failed'));
}

/** Reads the grant fields from a JSON or form body, and the credentials from it or Basic. */
function readTokenRequest(request: FastifyRequest): TokenRequest {
  const body = request.body;
  if (body === undefined || body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw invalidRequest('the body must be a JSON object or a form with client_id, client_secret, audience and grant_type');
  }
  const fields = body as Record<string, unknown>;
  const field = (name: string): string | undefined => {
    const value = fields[name];
    if (value === undefined) return undefined;
    if (typeof value !== 'string') throw invalidRequest(`${name} must be a string`);
    return value;
  };
  const grantType = field('grant_type');
  if (!grantType) throw invalidRequest('grant_type is required');
  const audience = field('audience');
  const fromBody = { clientId: field('client_id'), clientSecret: field('client_secret') };
  const fromHeader = readBasicCredentials(request.headers.authorization);
  if (fromHeader === 'unreadable') return { grantType, audience: audience ?? '', credentials: undefined };
  if (fromHeader && (fromBody.clientId !== undefined || fromBody.clientSecret !== undefined)) {
    // RFC 6749 §2.3: a client must not use more than one authentication method per request.
    if (fromBody.clientSecret !== undefined || fromBody.clientId !== fromHeader.clientId) {
      throw invalidRequest('send client credentials either in the body or as HTTP Basic, not both');
    }
  }
  const clientId = fromHeader?.clientId ?? fromBody.clientId;
  const clientSecret = fromHeader?.clientSecret ?? fromBody.clientSecret;
  if (!clientId) throw invalidRequest('client_id is required');
  if (!clientSecret) throw invalidRequest('client_secret is required');
  if (!audience) throw invalidRequest('audience is required');
  if (clientId.length > 256 || clientSecret.length > 256 || audience.length > 2048) {
    throw invalidRequest('a field is longer than allowed');
  }
  if ([grantType, audience, clientId, clientSecret].some((v) => v.includes('\u0000'))) {
    throw invalidRequest('fields must not contain NUL characters');
  }
  return { grantType, audience, credentials: { clientId, clientSecret } };
}

/** The client and its account, or why they are refused (the same 401 for every reason). */
async function authenticateClient(services: Services, credentials: ClientCredentials): Promise<ClientVerdict> {
  // Read from the store, not the cache: a secret reset elsewhere must bite here at once.
  const client = await services.accountsRepo.findClient(credentials.clientId);
  const account = client && (await services.accountsRepo.findAccount(client.account_id));
  return verifyClientSecret(client && account ? { client, account } : undefined, credentials);
}

function oauthErrorHandler(error: FastifyError | OAuthError, request: FastifyRequest, reply: FastifyReply) {
  reply.header('cache-control', 'no-store');
  if (error instanceof OAuthError) {
    if (error.status === 401) {
      if (/^basic /i.test(request.headers.authorization ?? '')) reply.header('www-authenticate', 'Basic realm="tollwatch"');
    }
    return reply.code(error.status).send({ error: error.error, error_description: error.message });
  }
  if (isStoreUnavailable(error)) {
    request.log.warn({ err: error }, 'store unavailable at the token endpoint');
    return reply.code(503).header('retry-after', '5').send({ error: 'temporarily_unavailable', error_description: 'the service cannot reach its store just now; retry shortly' });
  }
  const status = (error as FastifyError).statusCode;
  if (status === 413) return reply.code(413).send({ error: 'invalid_request', error_description: 'the request body is too large' });
  if (status !== undefined && status >= 400 && status < 500) {
    return reply.code(400).send({ error: 'invalid_request', error_description: 'the request body could not be read' });
  }
  request.log.error({ err: error }, 'token endpoint failure');
  return reply.code(500).send({ error: 'server_error', error_description: 'the server failed to answer; retry later' });
}

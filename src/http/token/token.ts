import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AuditEntry } from '../../domain/accounts/audit.ts';
import { isPermission, PERMISSIONS, type Permission } from '../../domain/accounts/permissions.ts';
import { readBasicCredentials, verifyClientSecret, type ClientCredentials, type ClientVerdict } from '../../oauth/client-authentication.ts';
import { invalidClient, invalidRequest, invalidScope, invalidTarget, OAuthError, unsupportedGrantType, type OAuthErrorCode } from '../../oauth/oauth-errors.ts';
import type { Services } from '../../services.ts';
import { accountFailure } from '../failed-authentication.ts';
import { faultClass, UNAVAILABLE_RETRY_SECONDS } from '../fault-class.ts';
import { securityHeaders } from '../security-headers.ts';
import { tokenBodyParsers } from './token-body.ts';
import { TOKEN_SCHEMAS, tokenRouteSchema } from './token-schema.ts';

/** What these routes use of the services. */
type RouteServices = Pick<Services, 'accounts' | 'audit' | 'authFailures' | 'metrics' | 'tokens'>;

interface TokenRequest {
  grantType: string | undefined;
  /** RFC 8707 `resource` or the `audience` of the specification; both name the token's audience. */
  audience: string | undefined;
  resource: string | undefined;
  /** Space-separated permissions asked for; all the client holds when absent. */
  scope: string | undefined;
  /** `unreadable` when HTTP Basic credentials were sent but cannot be read. */
  credentials: ClientCredentials | 'unreadable';
}

const TOKEN_BODY_LIMIT = 8 * 1024;

/**
 * POST /oauth/token: the client-credentials grant (docs/api.md §2), as a list of small steps:
 * no-store, read the body, authenticate the client (failures are counted, slowed, then refused
 * with 429), check the grant, settle the audience, settle the scope, issue. Credentials come
 * first: a wrong secret is `invalid_client` whatever else is wrong with the request, and a
 * request's other faults are told only to the client that made it.
 */
export async function tokenEndpoint(app: FastifyInstance, { services }: { services: RouteServices }) {
  await tokenBodyParsers(app, TOKEN_BODY_LIMIT);
  for (const schema of TOKEN_SCHEMAS) app.addSchema(schema);
  const headers = securityHeaders();
  app.addHook('onRequest', async (_request, reply) => {
    reply.headers(headers);
  });
  app.setErrorHandler(oauthErrorHandler(services));

  app.post(
    '/oauth/token',
    {
      bodyLimit: TOKEN_BODY_LIMIT,
      schema: tokenRouteSchema,
      // The schema documents; it must not reshape the answer either (see token-schema.ts).
      serializerCompiler: () => (data: unknown) => JSON.stringify(data),
    },
    async (request: FastifyRequest, reply: FastifyReply) => {
      reply.header('cache-control', 'no-store').header('pragma', 'no-cache');
      const tokenRequest = readTokenRequest(request);
      // Unreadable Basic credentials are a failed authentication, whatever else the body says.
      if (tokenRequest.credentials === 'unreadable') return refuse(services, request, reply, { reason: 'unreadable credentials' });
      const { clientId } = tokenRequest.credentials;
      // Valid credentials get their token whatever failed before from this address or for this
      // client id; only a failure is counted, slowed, then refused.
      const verdict = await authenticateClient(services, tokenRequest.credentials);
      if (!verdict.ok) return refuse(services, request, reply, { clientId, ...verdict.subject, reason: verdict.reason });
      const { client, account } = verdict;
      if (tokenRequest.grantType === undefined) throw invalidRequest('grant_type is required');
      if (tokenRequest.grantType !== 'client_credentials') throw unsupportedGrantType();
      const audience = services.tokens.audienceFor(tokenRequest.audience, tokenRequest.resource);
      if (audience === undefined) {
        // Not an authentication failure (the credentials were good), so not counted; but a
        // client asking for the wrong audience is worth a line for its operator.
        recordAudit(services, request, {
          action: 'token.refused',
          actor: `client:${client.client_id}`,
          accountId: account.account_id,
          clientId: client.client_id,
          ip: request.ip,
          detail: { reason: 'invalid_target', audience: tokenRequest.audience ?? tokenRequest.resource ?? null },
        });
        throw invalidTarget();
      }
      const permissions = grantedPermissions(client.permissions, tokenRequest.scope);
      const accessToken = await services.tokens.issue({
        clientId: client.client_id,
        accountId: account.account_id,
        permissions,
        secretVersion: client.secret_version,
        audience,
      });
      await services.audit.record({
        action: 'token.issued',
        actor: `client:${client.client_id}`,
        accountId: account.account_id,
        clientId: client.client_id,
        ip: request.ip,
        detail: { audience, scope: permissions.join(' ') },
      });
      services.metrics.tokenIssued();
      // The owner's "last used" (docs/dashboard.md); never holds up or fails the answer.
      services.accounts.recordClientUse(client.client_id, request.ip).catch((err: unknown) => request.log.warn({ err }, 'client use not recorded'));
      return {
        access_token: accessToken,
        token_type: 'Bearer',
        expires_in: services.tokens.ttlSeconds,
        scope: permissions.join(' '),
      };
    },
  );
}

/**
 * The permissions a token carries: every one the client holds, or those `scope` names (RFC
 * 6749 §3.3), in the canonical order. Naming one that does not exist, or that the client does
 * not hold, is `invalid_scope`: a token is never silently narrower or wider than asked.
 */
function grantedPermissions(held: Permission[], scope: string | undefined): Permission[] {
  if (scope === undefined || scope.trim() === '') return PERMISSIONS.filter((p) => held.includes(p));
  const asked = new Set(scope.split(' ').filter((s) => s !== ''));
  // The description names no value: RFC 6749 allows only plain ASCII there, and echoing the
  // caller's text back is no help to a client that sent it.
  if ([...asked].some((s) => !isPermission(s) || !held.includes(s))) throw invalidScope();
  return PERMISSIONS.filter((p) => asked.has(p));
}

/**
 * Answers a failed client authentication, counted and audited as every failure is (see
 * client-authentication.ts): 429 once refused, else 401 `invalid_client` after its delay.
 */
async function refuse(
  services: RouteServices,
  request: FastifyRequest,
  reply: FastifyReply,
  { clientId, accountId, reason }: { clientId?: string; accountId?: string; reason: string },
): Promise<never> {
  const failure: AuditEntry & { ip: string } = { action: 'token.refused', actor: 'anonymous', clientId, accountId, ip: request.ip, detail: { reason } };
  const answer = await accountFailure({ failures: services.authFailures, audit: services.audit, log: request.log, metrics: services.metrics }, failure);
  if (answer.refused) {
    reply.header('retry-after', answer.retryAfterSeconds);
    throw new OAuthError(429, 'rate_limited', 'too many failed authentications; retry later');
  }
  throw invalidClient();
}

/** Writes an audit row without waiting: the answer must not wait for the audit table. */
function recordAudit(services: RouteServices, request: FastifyRequest, entry: AuditEntry): void {
  services.audit.record(entry).catch((err: unknown) => request.log.warn({ err }, 'audit write failed'));
}

/**
 * Reads the fields of a JSON or form body, and the credentials from it or from Basic. Only the
 * shape of the request is judged here (fields are strings, bounded, without NUL; credentials
 * one way, not both); what the fields ask for is judged after the client is authenticated.
 */
function readTokenRequest(request: FastifyRequest): TokenRequest {
  const body = request.body;
  if (body === undefined || body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw invalidRequest('the body must be a JSON object or a form with client_id, client_secret and grant_type');
  }
  const fields = body as Record<string, unknown>;
  const field = (name: string, maxLength: number): string | undefined => {
    const value = fields[name];
    if (value === undefined) return undefined;
    if (typeof value !== 'string') throw invalidRequest(`${name} must be a string`);
    if (value.length > maxLength) throw invalidRequest(`${name} is longer than allowed`);
    if (value.includes('\u0000')) throw invalidRequest(`${name} must not contain NUL characters`);
    return value;
  };
  const read = {
    grantType: field('grant_type', 256) || undefined,
    audience: field('audience', 2048) || undefined,
    resource: field('resource', 2048) || undefined,
    scope: field('scope', 2048),
  };
  const fromBody = { clientId: field('client_id', 256), clientSecret: field('client_secret', 256) };
  const fromHeader = readBasicCredentials(request.headers.authorization);
  if (fromHeader === 'unreadable') return { ...read, credentials: 'unreadable' };
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
  return { ...read, credentials: { clientId, clientSecret } };
}

/** The client and its account, or why they are refused (the same 401 for every reason). */
async function authenticateClient(services: RouteServices, credentials: ClientCredentials): Promise<ClientVerdict> {
  return verifyClientSecret(await services.accounts.credentialsOf(credentials.clientId), credentials);
}

/**
 * Every refusal of the token endpoint is answered here, in RFC 6749's shape, and counted by its
 * error code: the one place that knows what each refused request was told.
 */
function oauthErrorHandler(services: RouteServices) {
  const refuse = (reply: FastifyReply, status: number, error: OAuthErrorCode, description: string) => {
    services.metrics.tokenRefused(error);
    return reply.code(status).send({ error, error_description: description });
  };
  return function answer(error: FastifyError | OAuthError, request: FastifyRequest, reply: FastifyReply) {
    reply.header('cache-control', 'no-store');
    if (error instanceof OAuthError) {
      if (error.status === 401) {
        if (/^basic /i.test(request.headers.authorization ?? '')) reply.header('www-authenticate', 'Basic realm="tollwatch"');
      }
      return refuse(reply, error.status, error.error, error.message);
    }
    const fault = faultClass(error);
    if (fault.kind === 'client' && fault.status === 413) return refuse(reply, 413, 'invalid_request', 'the request body is too large');
    if (fault.kind === 'client') return refuse(reply, 400, 'invalid_request', 'the request body could not be read');
    if (fault.kind === 'unavailable') {
      request.log.warn({ err: error }, 'store unavailable at the token endpoint');
      reply.header('retry-after', UNAVAILABLE_RETRY_SECONDS);
      return refuse(reply, 503, 'temporarily_unavailable', 'the service cannot reach its store just now; retry shortly');
    }
    request.log.error({ err: error }, 'token endpoint failure');
    return refuse(reply, 500, 'server_error', 'the server failed to answer; retry later');
  };
}

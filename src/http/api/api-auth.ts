import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AuditTrail } from '../../domain/accounts/audit.ts';
import type { ClientActivity } from '../../domain/accounts/client-activity.ts';
import type { Permission } from '../../domain/accounts/permissions.ts';
import type { FailureThrottle } from '../../limits/failure-throttle.ts';
import type { Metrics } from '../../metrics/metrics.ts';
import { InvalidTokenError } from '../../oauth/access-tokens.ts';
import type { ApiAuthenticator, Principal } from '../../oauth/api-authenticator.ts';
import { readBasicCredentials } from '../../oauth/client-authentication.ts';
import { accountFailure } from '../failed-authentication.ts';
import type { Services } from '../../services.ts';
import { protectedResourceMetadataUrl } from '../operational/operational.ts';
import { problem, sendProblem, type Problem } from '../problem.ts';


/** The authenticated principal of a route that declared a permission. */
export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw new Error('route reached without authentication');
  return request.principal;
}

/** How a scope answers a refusal: `/api` with a problem document, TAXII with its error resource. */
export type RefusalSender = (reply: FastifyReply, refusal: Problem) => FastifyReply;

export interface ApiAuthOptions {
  authenticator: ApiAuthenticator;
  basicAuth: boolean;
  failures: FailureThrottle;
  audit: AuditTrail;
  metrics: Metrics;
  /** Where RFC 9728 protected-resource metadata tells clients how to get a token. */
  resourceMetadataUrl: string;
  /** Told of every authenticated call: the owner's "last API call", noted in memory (domain/accounts/client-activity.ts). */
  activity: Pick<ClientActivity, 'called'>;
}

/** The authentication options of the `/api` scope, from the services. */
export function apiAuthOptions(services: Services): ApiAuthOptions {
  return {
    authenticator: services.authenticator,
    basicAuth: services.config.basicAuth,
    failures: services.authFailures,
    audit: services.audit,
    metrics: services.metrics,
    resourceMetadataUrl: protectedResourceMetadataUrl(services.config.publicUrl),
    activity: services.clientActivity,
  };
}

/**
 * Authenticates an `/api` request and checks a permission (docs/api.md §3); the principal, or
 * undefined once it has answered 401, 403 or 429. Credentials are verified first: valid ones
 * are always honoured, whatever failed before from the same address or for the same client.
 * Only a failure is counted (against the address, and against the client id when one is
 * known), then slowed and answered 401, or refused with 429 once over the limit. A request
 * with no Authorization header at all is not an attempt: 401, not counted. Token-lifecycle
 * refusals (expired, revoked by a secret reset, client deleted, account disabled) count too:
 * a client hammering with a dead token is slowed like anyone else.
 */
export function apiGate({ authenticator, basicAuth, failures, audit, metrics, resourceMetadataUrl }: ApiAuthOptions, send: RefusalSender = sendProblem) {
  const challenges = challengesFor(basicAuth, resourceMetadataUrl);
  const unauthenticated = (reply: FastifyReply, with_: string[]) => {
    reply.header('www-authenticate', with_);
    send(reply, problem('invalid_token', 'a valid access token is required'));
  };
  return async function admit(request: FastifyRequest, reply: FastifyReply, needed: Permission | undefined): Promise<Principal | undefined> {
    const header = request.headers.authorization;
    if (!header) {
      unauthenticated(reply, challenges.noCredentials);
      return undefined;
    }
    let principal: Principal;
    try {
      principal = await fromAuthorization(authenticator, header, basicAuth);
    } catch (err) {
      if (!(err instanceof InvalidTokenError)) throw err;
      const { clientId, accountId } = err.subject;
      const answer = await accountFailure(
        { failures, audit, log: request.log, metrics },
        { action: 'api.auth_failed', actor: 'anonymous', clientId, accountId, ip: request.ip, detail: { reason: err.message, path: request.routeOptions.url ?? null } },
      );
      if (answer.refused) {
        reply.header('retry-after', answer.retryAfterSeconds);
        send(reply, problem('rate_limited', 'too many failed authentications; retry later'));
        return undefined;
      }
      unauthenticated(reply, challenges.invalidCredentials);
      return undefined;
    }
    if (needed && !principal.permissions.has(needed)) {
      refuseScope(reply, needed, send);
      return undefined;
    }
    return principal;
  };
}

/**
 * The 403 of a caller whose client lacks `needed` (RFC 6750 §3.1): the challenge names the
 * permission a new token must carry, the refusal says it in the scope's own shape.
 */
export function refuseScope(reply: FastifyReply, needed: Permission, send: RefusalSender = sendProblem): FastifyReply {
  reply.header('www-authenticate', `Bearer realm="tollwatch", error="insufficient_scope", scope="${needed}"`);
  return send(reply, problem('insufficient_scope', `this client lacks the ${needed} permission`));
}

/**
 * The `/api` onRequest hook: authenticates before any body is read, with the permission the
 * route declares; unknown paths are authenticated too, then answered 404.
 */
export function apiAuthHook(options: ApiAuthOptions) {
  const admit = apiGate(options);
  const { activity } = options;
  return async function authenticate(request: FastifyRequest, reply: FastifyReply) {
    const needed = request.routeOptions.config.permission;
    if (!needed && request.is404 !== true) return;
    const principal = await admit(request, reply, needed);
    if (!principal) return reply;
    request.principal = principal;
    activity.called(principal.client.client_id, request.ip);
  };
}

/**
 * The WWW-Authenticate challenges of a 401: Bearer always, with the RFC 9728 metadata that
 * leads a client to the token endpoint, and Basic too while it is accepted, so clients that
 * answer challenges (Python's HTTPBasicAuthHandler, `curl --anyauth`) find it. RFC 6750 §3.1:
 * no `error` attribute when the request carried no credentials at all.
 */
function challengesFor(basicAuth: boolean, resourceMetadataUrl: string) {
  const bearer = `Bearer realm="tollwatch", resource_metadata="${resourceMetadataUrl}"`;
  const basic = basicAuth ? ['Basic realm="tollwatch", charset="UTF-8"'] : [];
  return {
    noCredentials: [bearer, ...basic],
    invalidCredentials: [`${bearer}, error="invalid_token"`, ...basic],
  };
}

async function fromAuthorization(authenticator: ApiAuthenticator, header: string, basicAuth: boolean): Promise<Principal> {
  // Nearly every request: a token this process admitted before, told by its header as sent.
  if (header.startsWith('Bearer ')) {
    const admitted = authenticator.admittedBearer(header.slice(7));
    if (admitted) return admitted;
  }
  const space = header.indexOf(' ');
  const scheme = (space < 0 ? header : header.slice(0, space)).toLowerCase();
  const value = space < 0 ? '' : header.slice(space + 1).trim();
  if (scheme === 'bearer' && value) return authenticator.fromBearer(value);
  if (scheme === 'basic' && basicAuth) {
    const credentials = readBasicCredentials(header);
    if (credentials && credentials !== 'unreadable') return authenticator.fromBasic(credentials);
  }
  throw new InvalidTokenError(`unusable ${scheme} credentials`);
}

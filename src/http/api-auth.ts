import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AuditTrail } from '../domain/audit.ts';
import type { Permission } from '../domain/permissions.ts';
import type { FailureThrottle } from '../limits/failure-throttle.ts';
import { InvalidTokenError } from '../oauth/access-tokens.ts';
import type { ApiAuthenticator, Principal } from '../oauth/api-authenticator.ts';
import { problem, sendProblem } from './problem.ts';

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | undefined;
  }
  interface FastifyContextConfig {
    /** The permission a route needs; routes without one are public (OpenAPI only). */
    permission?: Permission;
  }
}

/** The authenticated principal of a route that declared a permission. */
export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw new Error('route reached without authentication');
  return request.principal;
}

/** Refusals that are a token's normal end of life, not an attack: not counted as failures. */
const LIFECYCLE_REASONS = new Set(['ERR_JWT_EXPIRED', 'secret reset', 'client deleted', 'account disabled']);

export interface ApiAuthOptions {
  authenticator: ApiAuthenticator;
  basicAuth: boolean;
  failures: FailureThrottle;
  audit: AuditTrail;
}

/**
 * The `/api` onRequest hook: authenticates before any body is read (CONTRACT §3). Bearer is
 * always accepted, Basic when enabled; a route's declared permission is checked here too.
 * Addresses that keep failing are slowed, then refused with 429 before any verification work.
 */
export function apiAuthHook({ authenticator, basicAuth, failures, audit }: ApiAuthOptions) {
  return async function authenticate(request: FastifyRequest, reply: FastifyReply) {
    const needed = request.routeOptions.config.permission;
    if (!needed && request.is404 !== true) return;
    const refusedFor = await failures.refusal(request.ip, undefined);
    if (refusedFor !== undefined) {
      reply.header('retry-after', refusedFor);
      return sendProblem(reply, problem('rate_limited', 'too many failed authentications from this address; retry later'));
    }
    let principal: Principal;
    try {
      principal = await fromAuthorization(authenticator, request.headers.authorization, basicAuth);
    } catch (err) {
      if (!(err instanceof InvalidTokenError)) throw err;
      // Recorded without waiting: the audit write must not hold the answer.
      audit
        .record({ action: 'api.auth_failed', actor: 'anonymous', ip: request.ip, detail: { reason: err.message, path: request.routeOptions.url ?? null } })
        .catch((auditError: unknown) => request.log.warn({ err: auditError }, 'audit write failed'));
      if (!LIFECYCLE_REASONS.has(err.message)) await failures.failed(request.ip, undefined);
      reply.header('www-authenticate', 'Bearer realm="tollwatch", error="invalid_token"');
      return sendProblem(reply, problem('invalid_token', 'a valid access token is required'));
    }
    request.principal = principal;
    if (needed && !principal.permissions.has(needed)) {
      reply.header('www-authenticate', `Bearer realm="tollwatch", error="insufficient_scope", scope="${needed}"`);
      return sendProblem(reply, problem('insufficient_scope', `this client lacks the ${needed} permission`));
    }
  };
}

async function fromAuthorization(
  authenticator: ApiAuthenticator,
  header: string | undefined,
  basicAuth: boolean,
): Promise<Principal> {
  if (!header) throw new InvalidTokenError('no credentials');
  const space = header.indexOf(' ');
  const scheme = (space < 0 ? header : header.slice(0, space)).toLowerCase();
  const value = space < 0 ? '' : header.slice(space + 1).trim();
  if (scheme === 'bearer' && value) return authenticator.fromBearer(value);
  if (scheme === 'basic' && value && basicAuth) {
    const decoded = Buffer.from(value, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    const clientId = safeDecode(decoded.slice(0, colon));
    // Client ids are URL-safe; anything else (NUL would upset PostgreSQL) cannot be one.
    if (colon > 0 && /^[\w-]{1,256}$/.test(clientId)) return authenticator.fromBasic(clientId, safeDecode(decoded.slice(colon + 1)));
  }
  throw new InvalidTokenError(`unusable ${scheme} credentials`);
}

/** RFC 6749 §2.3.1 form-encodes Basic credentials; plain ones must still work. */
function safeDecode(value: string): string {
  try {
    return decodeURIComponent(value.replace(/\+/g, ' '));
  } catch {
    return value;
  }
}


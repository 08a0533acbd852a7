import type { FastifyRequest } from 'fastify';
import type { Account } from '../domain/accounts/accounts.ts';
import type { ErrorCode } from '../domain/errors.ts';
import type { Permission } from '../domain/accounts/permissions.ts';
import type { LimitGroup } from '../limits/plan-limiter.ts';
import type { Principal } from '../oauth/api-authenticator.ts';

/**
 * Everything an `/api` or `/ingest` route declares about itself, read by the scope's hooks
 * (api.ts, ingest.ts), and what those hooks leave on the request. A route states what it needs; it runs no hook of its
 * own for it.
 */
declare module 'fastify' {
  interface FastifyContextConfig {
    /** The permission a route needs (docs/api.md §3); routes without one are public (OpenAPI only). */
    permission?: Permission;
    /** Submission routes: the account's plan must allow submitting, checked before the body is read (docs/api.md §5). */
    submission?: boolean;
    /** The allowance a route spends from (docs/api.md §9); unlimited routes name none. */
    rateGroup?: LimitGroup;
    /** How many units a request spends, e.g. one per event of a batch; 1 when absent. */
    rateCost?: (request: FastifyRequest) => number;
    /** What a path value that cannot be read means on this route: its problem, and what it names. */
    pathValue?: { code: ErrorCode; name: string };
  }

  interface FastifyRequest {
    /** Who is calling; set by the authentication hook on every route that declares a permission. */
    principal: Principal | undefined;
    /** The account an ingest URL delivers to; set by the `/ingest` scope's hook (docs/api.md §11). */
    ingestAccount: Account | undefined;
  }

  interface FastifyInstance {
    /** The absolute address problem `type` URIs are built on (`<public url>/problems`). */
    problemTypes: string;
  }
}

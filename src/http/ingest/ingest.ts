import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Services } from '../../services.ts';
import { apiConventions } from '../api/api.ts';
import { ingestAuthHook, ingestGate, type IngestGate } from './ingest-auth.ts';
import { rateLimitHook } from '../rate-limit-hook.ts';
import { ingestSubmitRoute } from './ingest-submit.ts';

/** The ingest gate over the services: one per app, shared by the scope and the bad-URL answer. */
export function ingestGateOf(services: Services): IngestGate {
  return ingestGate({ ingestUrls: services.ingestUrls, failures: services.authFailures, audit: services.audit, metrics: services.metrics });
}

/**
 * The `/ingest` scope: node ingest URLs (docs/api.md §11). Outside `/api` because its credential
 * is the secret in the path, not an Authorization header: under `/api` every request, unknown
 * paths included, is authenticated by that header and refused 401 with a challenge, which a
 * webhook client cannot answer. In everything else it is `/api`: its headers, JSON bodies,
 * problem details, plan rules and submission allowance.
 */
export async function ingestScope(app: FastifyInstance, { services, gate }: { services: Services; gate: IngestGate }) {
  const allowed = apiConventions(app);
  app.addHook('onRequest', ingestAuthHook(gate, services.intake));
  app.addHook('preHandler', rateLimitHook(services.limiter, services.plans, services.metrics, (request) => request.ingestAccount));
  // Another method on an ingest URL is 405 whatever the secret, so it tells nothing about it.
  // Any other path here (no secret, a secret too long for the router, extra segments) is a
  // secret that names nothing, and is answered and counted as one.
  app.setNotFoundHandler(
    async (request: FastifyRequest, reply: FastifyReply) =>
      allowed.refuseOtherMethod(request, reply) ?? gate.refuse(request, reply, { ok: false, reason: 'unknown ingest url' }),
  );

  await app.register(ingestSubmitRoute, { services });
}

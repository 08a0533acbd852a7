import { createServer } from 'node:http';
import { PEER_EVIDENCE_REFRESH_MS } from './domain/federation/peer-evidence.ts';
import swagger from '@fastify/swagger';
import { openApiOptions } from './http/openapi.ts';
import swaggerUi from '@fastify/swagger-ui';
import Fastify, { type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest, type FastifyServerOptions, type HTTPMethods } from 'fastify';
import { apiAuthOptions, apiGate } from './http/api/api-auth.ts';
import type { IngestGate } from './http/ingest/ingest-auth.ts';
import { apiErrorHandler } from './http/api/api-errors.ts';
import { limitConnections } from './http/connection-limits.ts';
import { clientAddressOf } from './http/client-address.ts';
import { directIntake } from './http/lanes/direct-intake.ts';
import { laneRequestLog, type RequestHandler } from './http/lanes/direct-lanes.ts';
import { directLookups } from './http/lanes/direct-lookups.ts';
import { addressRanges } from './domain/address-ranges.ts';
import { apiHeaders, apiScope } from './http/api/api.ts';
import { documentationOnlyValidators } from './http/schemas.ts';
import { ingestGateOf, ingestScope } from './http/ingest/ingest.ts';
import { taxiiScope } from './http/taxii/taxii-scope.ts';
import { MAX_PATH_VALUE_LENGTH, routeMalformedApiPaths } from './http/malformed-path.ts';
import { problem, sendProblem } from './http/problem.ts';
import { countRequests } from './http/request-metrics.ts';
import { metricsRoute } from './http/operational/metrics.ts';
import { operationalRoutes } from './http/operational/operational.ts';
import { problemPages } from './web/problems-page.ts';
import { integrationConfirmPages } from './web/address-confirmation.ts';
import { UNMATCHED_ROUTE } from './metrics/metrics.ts';
import { documentationContentSecurityPolicy, securityHeaders } from './http/security-headers.ts';
import { tokenEndpoint } from './http/token/token.ts';
import type { Services } from './services.ts';
import { webNotFound, webScope } from './web/web-scope.ts';

export interface AppOptions {
  /** The process logger; no logging when absent (tests). */
  loggerInstance?: FastifyServerOptions['loggerInstance'];
}

/** Builds the HTTP application over a set of services; `server.ts` makes it listen. */
export async function buildApp(services: Services, options: AppOptions = {}): Promise<FastifyInstance> {
  const gate = ingestGateOf(services);
  let closing = false;
  let built: FastifyInstance | undefined;
  const lanes = directLanesOf(services, options, () => built!, () => closing);
  const timeoutMs = services.config.requestTimeoutMs;
  const app = Fastify({
    // The server Fastify would make (Fastify applies no server setting to a factory's), with the
    // direct lanes of lookups and single events in front of its handler.
    serverFactory: (handler) => {
      const server = createServer(
        // Slow clients must not hold connections: headers must arrive within 10 s (or the
        // request timeout, if shorter) and the whole request within the request timeout. Node
        // enforces both only when it checks its connections, every 30 s by default, which held a
        // request trickled at 1 byte/s for 53 s; checked every second, a slow request is cut off
        // within a second of its bound.
        { headersTimeout: Math.min(timeoutMs, 10_000), requestTimeout: timeoutMs, connectionsCheckingInterval: 1000 },
        lanes(handler),
      );
      // An idle kept-alive connection is closed after 72 s, not the request timeout: longer than
      // the usual load-balancer idle timeout (60 s), so the balancer closes a pooled connection
      // first and never sends a request down one we are closing.
      server.keepAliveTimeout = 72_000;
      // A new connection that sends nothing is closed after the request timeout too.
      server.setTimeout(timeoutMs);
      return server;
    },
    ...(options.loggerInstance ? { loggerInstance: options.loggerInstance } : { logger: false }),
    bodyLimit: 128 * 1024,
    // Fastify gives each plugin 10 s to start: instances started side by side on a loaded
    // two-core machine took longer (the OpenAPI page's plugin, three at once in CI), and a slow
    // start is not a failed one. A plugin that never starts still fails the start, after a minute.
    pluginTimeout: 60_000,
    routerOptions: { maxParamLength: MAX_PATH_VALUE_LENGTH },
    // Paths the router would refuse unauthenticated are sent on to their routes instead.
    rewriteUrl: routeMalformedApiPaths,
    return503OnClosing: true,
    // Behind a proxy the socket address is the proxy's: the failure throttle and the audit
    // trail need the client's, read from X-Forwarded-For of the proxies named here only.
    trustProxy: services.config.trustProxy ?? false,
    // Fastify validates no request, in any scope (http/schemas.ts).
    schemaController: { compilersFactory: { buildValidator: documentationOnlyValidators } },
    frameworkErrors: badUrlAnswer(services, gate),
  });
  built = app;

  app.addHook('preClose', (done) => {
    closing = true;
    done();
  });
  // Alerts are delivered by the processes that serve, from the moment they do (the CLI never does).
  app.addHook('onListen', async () => services.alertWorker.start());
  app.addHook('onClose', async () => services.alertWorker.stop());
  // So is the TAXII publisher: each serving process takes turns at it, one at a time by a lease.
  app.addHook('onListen', async () => services.taxiiPublisher.start(services.config.taxii.publishIntervalMs, (err) => app.log.warn({ err }, 'publishing TAXII versions failed; retrying at the next turn')));
  app.addHook('onClose', async () => services.taxiiPublisher.stop());
  // Peers are read off the request path (docs/federation.md); a lease per peer lets one instance poll it.
  app.addHook('onListen', async () => services.peerPoller.start());
  app.addHook('onClose', async () => services.peerPoller.stop());
  // And what the peers said, read again every few seconds: a peer's poll on any instance reaches this one's lookups.
  app.addHook('onListen', async () => services.peerEvidence.start(PEER_EVIDENCE_REFRESH_MS));
  app.addHook('onClose', async () => services.peerEvidence.stop());

  // First, so that every route registered below is counted under its pattern.
  countRequests(app, services.metrics);
  await app.register(swagger, openApiOptions(services));

  // Every answer, whatever route or 404 produced it, gets the security headers; scopes that
  // need more (or, for /docs, a looser CSP) set theirs over these.
  const pageHeaders = securityHeaders();
  // Callback style, as every per-request hook here: an async hook costs a promise per request.
  app.addHook('onRequest', (_request, reply, done) => {
    reply.headers(pageHeaders);
    done();
  });

  // Problem `type` URIs are absolute, on the page that explains each code.
  app.decorate('problemTypes', `${services.config.publicUrl}/problems`);
  await app.register(operationalRoutes, { services });
  const exposition = services.metrics.exposition;
  if (exposition) await app.register(metricsRoute, { services, exposition });
  await app.register(problemPages);
  await app.register(integrationConfirmPages, { services });
  await app.register(tokenEndpoint, { services });
  await app.register(apiScope, { prefix: '/api', services });
  await app.register(ingestScope, { prefix: '/ingest', services, gate });
  await app.register(taxiiScope, { prefix: '/taxii2', services });
  // staticCSP replaces the page policy on every answer of the /docs scope (its static files
  // included) in an onSend hook; the other security headers stay as the hook above set them.
  // The dashboard's pages at / (docs/dashboard.md), in a scope of their own: session cookies,
  // forms and a page policy that lets the dashboard's own script and stylesheet load.
  await app.register(webScope, { services });
  // Everything else: a page for a browser (and the icon), Fastify's JSON for a program.
  app.setNotFoundHandler(webNotFound(services));
  await app.register(swaggerUi, { routePrefix: '/docs', staticCSP: documentationContentSecurityPolicy(services.config.publicUrl) });
  const { maxConnections, maxConnectionsPerAddress, trustProxy } = services.config;
  limitConnections(
    app.server,
    {
      maxConnections,
      perAddress: maxConnectionsPerAddress,
      // A trusted proxy's connections carry many clients: it limits each of them itself (docs/operations.md).
      exempt: trustProxy === true ? () => true : trustProxy ? addressRanges(trustProxy) : () => false,
    },
    app.log,
  );
  return app;
}

/**
 * Fastify's request handler behind the direct lanes (http/lanes/direct-lookups.ts,
 * http/lanes/direct-intake.ts), each unless configured off. The lanes find a request's route with
 * Fastify's own router, and log what they answer as Fastify logs its requests (one line each,
 * when the logger writes info), so the log level changes what is written, not which path serves.
 */
function directLanesOf(services: Services, options: AppOptions, app: () => FastifyInstance, closing: () => boolean): (handler: RequestHandler) => RequestHandler {
  const { config } = services;
  const clientAddress = clientAddressOf(config.trustProxy);
  const requestLog = laneRequestLog(options.loggerInstance, clientAddress);
  const shared = {
    authenticator: services.authenticator,
    plans: services.plans,
    limiter: services.limiter,
    metrics: services.metrics,
    headers: apiHeaders(),
    closing,
    activity: services.clientActivity,
    clientAddress,
    // Lanes answer only once the server listens, when every route is registered.
    route: (method: string, url: string) => app().findRoute({ method: method as HTTPMethods, url }) as { params: Record<string, string | undefined> } | null,
    ...(requestLog ? { requestLog } : {}),
  };
  const lookups = config.directLookups ? directLookups({ ...shared, lookups: services.lookups }) : undefined;
  const intake = config.directIntake ? directIntake({ ...shared, intake: services.intake }) : undefined;
  return (handler) => {
    const behindIntake: RequestHandler = lookups ? (request, response) => lookups(request, response, handler) : handler;
    return intake ? (request, response) => intake(request, response, behindIntake) : behindIntake;
  };
}

/**
 * A path the router cannot take never reaches a route scope. Outside `/api` and `/ingest` it
 * gets a plain 400. Under `/api`, `routeMalformedApiPaths` should already have sent it on to its
 * route; if one gets here all the same, it is authenticated like any `/api` request, then not
 * found: nothing under `/api` answers before credentials are checked. Under `/ingest` it is a
 * secret that names nothing (secrets need no %-encoding): 404, counted as a failure. Such
 * answers run no hooks, so they are counted here, as unmatched.
 */
function badUrlAnswer(services: Services, ingest: IngestGate) {
  const admit = apiGate(apiAuthOptions(services));
  const headers = apiHeaders();
  const unmatched = services.metrics.route(UNMATCHED_ROUTE);
  // Hooks do not run for an answer the router gives before any route is found.
  const pageHeaders = securityHeaders();
  return async function answer(_error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
    const started = performance.now();
    reply.raw.once('finish', () => unmatched.answered(request.method, reply.statusCode, performance.now() - started));
    const url = request.raw.url ?? '';
    if (/^(https?:\/\/[^/?#]*)?\/ingest\//i.test(url)) {
      reply.headers(headers);
      return ingest.refuse(request, reply, { ok: false, reason: 'unknown ingest url' });
    }
    if (!/^(https?:\/\/[^/?#]*)?\/api\//i.test(url)) return reply.code(400).headers(pageHeaders).send({ error: 'bad_request', message: 'malformed URL' });
    reply.headers(headers);
    try {
      if (!(await admit(request, reply, undefined))) return reply;
      request.log.warn({ url }, 'an /api path reached the bad-URL answer');
      return sendProblem(reply, problem('not_found', 'no such resource'));
    } catch (err) {
      return apiErrorHandler(err as FastifyError, request, reply);
    }
  };
}

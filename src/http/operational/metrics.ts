import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { addressRanges } from '../../domain/address-ranges.ts';
import type { MetricsExposition } from '../../metrics/metrics.ts';
import type { Services } from '../../services.ts';
import { securityHeaders } from '../security-headers.ts';

/** What these routes use of the services. */
type RouteServices = Pick<Services, 'config'>;

const REALM = 'Bearer realm="tollwatch-metrics"';

/**
 * GET /metrics: the Prometheus text exposition (docs/operations.md, "Metrics"). Outside `/api`
 * and its OAuth tokens: with `TOLLWATCH_METRICS_TOKEN`, only to a scraper sending that token as
 * Bearer; without it, only to a client on loopback (as a trusted proxy names it), since the
 * counters tell the service's whole intake, which no account may learn. Hidden from the OpenAPI
 * document, which describes the API, not its operation. Registered only when the server collects
 * metrics.
 */
export async function metricsRoute(app: FastifyInstance, { services, exposition }: { services: RouteServices; exposition: MetricsExposition }) {
  const allowed = metricsAccess(services.config.metricsToken);
  const headers = { ...securityHeaders(), 'cache-control': 'no-store' };

  app.get('/metrics', { schema: { hide: true } }, async (request, reply) => {
    reply.headers(headers);
    const verdict = allowed(request);
    if (verdict === 'remote') {
      // No token could help: none is configured. The operator's move, not the scraper's.
      return reply.code(403).send({ error: 'forbidden', message: 'metrics answer local clients only unless the operator sets a metrics token' });
    }
    if (verdict !== 'ok') {
      // RFC 6750 §3.1: no error attribute when no credentials were sent at all.
      reply.header('www-authenticate', verdict === 'missing' ? REALM : `${REALM}, error="invalid_token"`);
      return reply.code(401).send({ error: 'unauthorized', message: 'a valid metrics token is required' });
    }
    let text: string;
    try {
      text = await exposition.text();
    } catch (err) {
      // Under WORKERS: a worker did not answer the primary in time. A partial sum would read as
      // a counter reset, so the scrape fails instead and Prometheus records it as failed.
      request.log.warn({ err }, 'metrics could not be gathered');
      return reply.code(503).header('retry-after', '5').send({ error: 'unavailable', message: 'metrics could not be gathered just now' });
    }
    return reply.type(exposition.contentType).send(text);
  });
}

/**
 * Whether a request may read the metrics. Without a token, a client on loopback may: `request.ip`
 * is the client a trusted proxy names, so one forwarding the world's requests is not taken for
 * local (an untrusted proxy on this host is, which docs/operations.md warns of). Both sides
 * are hashed before the constant-time comparison, which needs equal lengths and would otherwise
 * tell the token's length by how fast a wrong one of another length is refused.
 */
function metricsAccess(token: string | undefined): (request: FastifyRequest) => 'ok' | 'remote' | 'missing' | 'wrong' {
  if (token === undefined) return (request) => (isLoopback(request.ip) ? 'ok' : 'remote');
  const expected = digest(token);
  return (request) => {
    const header = request.headers.authorization;
    if (!header) return 'missing';
    const match = /^bearer +(\S+) *$/i.exec(header);
    if (!match) return 'wrong';
    return timingSafeEqual(digest(match[1]!), expected) ? 'ok' : 'wrong';
  };
}

const isLoopback = addressRanges(['loopback']);

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}

import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { apiHeaders } from '../../src/http/api/api.ts';
import { clientAddressOf } from '../../src/http/client-address.ts';
import type { DirectLane, LaneServices } from '../../src/http/lanes/direct-lanes.ts';
import type { Harness } from './harness.ts';

/**
 * A direct lane's services from a harness's, with the calls it tells recorded in `told`, the
 * client's address read as behind a proxy on this machine (whom X-Forwarded-For names), and the
 * harness's router.
 */
export function laneServicesOf(h: Harness, told: Array<[string, string]>): LaneServices {
  const s = h.services;
  return {
    authenticator: s.authenticator,
    plans: s.plans,
    limiter: s.limiter,
    metrics: s.metrics,
    headers: apiHeaders(),
    closing: () => false,
    activity: { called: (clientId, address) => void told.push([clientId, address]) },
    clientAddress: clientAddressOf(['loopback']),
    route: (method, url) => h.app.findRoute({ method: method as 'GET', url }) as ReturnType<LaneServices['route']>,
  };
}

/**
 * A server of a lane alone, with `handedOver` standing behind it where Fastify's handler would:
 * it is told what reached it, and answers 299.
 */
export async function laneServer(lane: DirectLane, handedOver: (request: IncomingMessage) => void): Promise<{ server: Server; url: string }> {
  const fallback = (request: IncomingMessage, response: ServerResponse) => {
    handedOver(request);
    request.resume();
    response.writeHead(299).end();
  };
  const server = createServer((request, response) => lane(request, response, fallback));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  return { server, url: `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}` };
}

import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientAddressOf } from '../../src/http/client-address.ts';

/**
 * The direct lane reads a caller's address itself (src/http/client-address.ts); it must read
 * the one Fastify's `request.ip` reads for the same request, whatever the proxies trusted.
 */
describe('the client address of a request Fastify has not taken', () => {
  const trusts: Array<true | string[] | undefined> = [undefined, true, ['loopback'], ['127.0.0.1', '198.51.100.0/24'], ['10.0.0.0/8']];
  const servers: Array<{ trust: (typeof trusts)[number]; url: string; close(): Promise<void> }> = [];

  beforeAll(async () => {
    for (const trust of trusts) {
      const app = Fastify({ trustProxy: trust ?? false });
      const ours = clientAddressOf(trust);
      app.get('/', async (request) => ({ fastify: request.ip, ours: ours(request.raw) }));
      await app.listen({ port: 0, host: '127.0.0.1' });
      const address = app.server.address();
      servers.push({ trust, url: `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/`, close: () => app.close() });
    }
  });
  afterAll(async () => {
    for (const server of servers) await server.close();
  });

  it.each([
    ['no header', undefined],
    ['one hop', '203.0.113.9'],
    ['a chain through trusted proxies', '203.0.113.9, 198.51.100.4,198.51.100.5'],
    ['a chain with an untrusted hop in it', '203.0.113.9, 192.0.2.7, 198.51.100.5'],
    ['empty entries and tabs', ' ,203.0.113.9,\t, 198.51.100.5 '],
    ['something not an address', 'unknown, 198.51.100.5'],
    ['IPv6 entries', '2001:db8::9, ::ffff:198.51.100.5'],
    ['an empty header', ''],
  ])('reads as Fastify does: %s', async (_what, header) => {
    for (const { trust, url } of servers) {
      const res = await fetch(url, { headers: header === undefined ? {} : { 'x-forwarded-for': header } });
      const { fastify, ours } = (await res.json()) as { fastify: string; ours: string };
      expect(ours, `trust ${JSON.stringify(trust)}`).toBe(fastify);
    }
  });
});

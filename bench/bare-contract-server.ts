import { createServer } from 'node:http';
import { apiHeaders } from '../src/http/api.ts';

/**
 * The bare server of the baselines, answering what a found lookup answers: a found number's
 * JSON body with every header an `/api` lookup carries (security headers, API-Version,
 * Cache-Control, the RateLimit fields, content type and length), and no work. What the
 * contract's answer costs node:http alone, beside bare-server.ts's two headers and short body:
 *
 *   node bench/cpu-per-request.ts --server bench/bare-contract-server.ts
 */
const headers = {
  ...apiHeaders(),
  'ratelimit-policy': '"lookups";q=2000000000;w=1',
  ratelimit: '"lookups";r=1999999999;t=1',
  'content-type': 'application/json; charset=utf-8',
};
const body = JSON.stringify({
  phone_number: '+442071234567',
  found: true,
  seen_count: 12,
  first_seen: '2026-11-19T07:00:00.000000000Z',
  last_seen: '2026-11-21T10:00:00.123456789Z',
  score: 57,
  reasons: ['called from 3 distinct source addresses', 'seen by 2 honeypot nodes', '3 INVITE attempts, not only OPTIONS scans', 'seen 12 times', 'last seen 2 days ago'],
  source_ip_count: 3,
  sip_methods: { INVITE: 3, OPTIONS: 9 },
  matched_forms: ['+442071234567', '00442071234567'],
  e164: '+442071234567',
  country: 'GB',
  number_type: 'fixed-line',
  message: 'Attackers have tried to call this number 12 times.',
});
const server = createServer((_request, response) => {
  response.writeHead(200, { ...headers, 'content-length': Buffer.byteLength(body) });
  response.end(body);
});
server.keepAliveTimeout = 72_000;
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`listening ${typeof address === 'object' && address ? address.port : ''}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));

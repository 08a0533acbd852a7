import { createServer } from 'node:http';
import { listenAsBaseline } from './baseline-listen.ts';
import { apiHeaders } from '../../src/http/api/api.ts';
import { PhoneNumberFound } from '../../src/domain/lookups/lookup-answers.ts';

/**
 * The bare server of the baselines, answering what a found lookup answers: a found number's
 * JSON body (the OpenAPI document's example) with every header an `/api` lookup carries
 * (security headers, API-Version, Cache-Control, the RateLimit fields, content type and
 * length), and no work. What the contract's answer costs node:http alone, beside
 * bare-server.ts's two headers and short body:
 *
 *   node bench/probes/cpu-per-request.ts --server bench/baselines/bare-contract-server.ts
 */
const headers = {
  ...apiHeaders(),
  'ratelimit-policy': '"lookups";q=2000000000;w=1',
  ratelimit: '"lookups";r=1999999999;t=1',
  'content-type': 'application/json; charset=utf-8',
};
// The example the OpenAPI document gives of a found number.
const body = JSON.stringify((PhoneNumberFound as { example?: unknown }).example);
const server = createServer((_request, response) => {
  response.writeHead(200, { ...headers, 'content-length': Buffer.byteLength(body) });
  response.end(body);
});
listenAsBaseline(server);

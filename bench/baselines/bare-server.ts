import { createServer } from 'node:http';
import { listenAsBaseline } from './baseline-listen.ts';

// The machine's ceiling for an HTTP answer: a fixed small JSON body, no framework, no work.
const body = JSON.stringify({ phone_number: '+46812118532', found: false, message: 'baseline' });
const server = createServer((_request, response) => {
  response.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  response.end(body);
});
listenAsBaseline(server);

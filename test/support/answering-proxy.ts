import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A request as the proxy saw it. */
export interface ProxiedRequest {
  method: string;
  path: string;
  body: string;
}

/**
 * What the proxy does with one request: pass it on; pass it on and then cut the connection
 * before answering (the server acted, the client saw a network error); pass it on once
 * `forwardAfter` settles (a slow server); never answer (a hung one); or answer it itself.
 */
export type ProxyAction =
  | 'forward'
  | 'forward-then-reset'
  | 'hang'
  | { forwardAfter: Promise<unknown> }
  | { status: number; headers?: Record<string, string>; body?: string };

/** A proxy in front of a server, for faults only a network can cause. */
export interface AnsweringProxy {
  url: string;
  /** Every request received, in order. */
  requests: ProxiedRequest[];
  close(): Promise<void>;
}

/**
 * Starts a loopback HTTP proxy to `target` that asks `decide` what to do with each request:
 * the server's own answers pass unchanged, so the harness still holds them to the document.
 */
export async function startAnsweringProxy(target: string, decide: (request: ProxiedRequest, index: number) => ProxyAction): Promise<AnsweringProxy> {
  const requests: ProxiedRequest[] = [];
  const server = createServer(async (req, res) => {
    const body = await readBody(req);
    const request = { method: req.method ?? 'GET', path: req.url ?? '/', body };
    requests.push(request);
    const action = decide(request, requests.length - 1);
    if (action === 'hang') return;
    if (typeof action === 'object' && 'forwardAfter' in action) await action.forwardAfter.catch(() => {});
    else if (typeof action === 'object') {
      res.writeHead(action.status, action.headers ?? {});
      res.end(action.body ?? '');
      return;
    }
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers)) {
      if (typeof value === 'string' && !['host', 'connection', 'content-length', 'transfer-encoding'].includes(name)) headers.set(name, value);
    }
    const answer = await fetch(`${target}${request.path}`, { method: request.method, headers, ...(body === '' ? {} : { body }) });
    const text = await answer.text();
    if (action === 'forward-then-reset') {
      req.socket.destroy();
      return;
    }
    const out: Record<string, string> = {};
    answer.headers.forEach((value, name) => {
      if (!['content-length', 'content-encoding', 'transfer-encoding', 'connection', 'keep-alive'].includes(name)) out[name] = value;
    });
    res.writeHead(answer.status, out);
    res.end(text);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

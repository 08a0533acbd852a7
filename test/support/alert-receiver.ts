import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request the receiver got. */
export interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/**
 * A local HTTP receiver standing in for a webhook or Slack endpoint: records every request and
 * answers with the statuses queued for it (200 once the queue is empty).
 */
export interface AlertReceiver {
  url: string;
  received: Received[];
  /** Statuses for the next requests whose path starts with `path`, in order. */
  answer(path: string, ...statuses: number[]): void;
  /** From now on, answers every request whose path starts with `path` with `status`, `ms` after it arrived. */
  answerSlowly(path: string, ms: number, status: number): void;
  /** Resolves once `count` requests whose path starts with `path` have arrived (or throws after `timeoutMs`). */
  waitFor(count: number, path?: string, timeoutMs?: number): Promise<Received[]>;
  close(): Promise<void>;
}

export async function startAlertReceiver(): Promise<AlertReceiver> {
  const received: Received[] = [];
  const queued: Array<{ path: string; status: number }> = [];
  const slow: Array<{ path: string; ms: number; status: number }> = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = req.url ?? '/';
      received.push({ path, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      const rule = slow.find((r) => path.startsWith(r.path));
      if (rule) return void setTimeout(() => res.writeHead(rule.status).end('slow'), rule.ms);
      const next = queued.findIndex((q) => path.startsWith(q.path));
      res.writeHead(next < 0 ? 200 : queued.splice(next, 1)[0]!.status).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const matching = (path: string) => received.filter((r) => r.path.startsWith(path));
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    answer: (path, ...statuses) => void queued.push(...statuses.map((status) => ({ path, status }))),
    answerSlowly: (path, ms, status) => void slow.push({ path, ms, status }),
    async waitFor(count, path = '/', timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      while (matching(path).length < count) {
        if (Date.now() > deadline) throw new Error(`receiver got ${matching(path).length} of ${count} requests to ${path}`);
        await new Promise((r) => setTimeout(r, 25));
      }
      return matching(path);
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Alert timings short enough for a test: polled every 50 ms, retried after 100 ms. */
export const FAST_ALERTS = { pollMs: 50, retryBaseMs: 100, retryMaxMs: 400, lookupFlushMs: 50, maxAttempts: 3 };

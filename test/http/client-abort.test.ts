import { connect } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.ts';
import { createLogger } from '../../src/logger.ts';
import { startHarness, type Harness, type TestAccount } from '../support/harness.ts';

/**
 * A client that drops its connection in the middle of a body is the client's fault, not the
 * store's: it must never be logged as a store outage, which anyone could otherwise fake or
 * drown (docs/guarantees.md).
 */
describe('a connection reset mid-body', () => {
  let h: Harness;
  let who: TestAccount;
  let logged: FastifyInstance;
  let port = 0;
  const lines: Array<{ msg?: string; level?: number }> = [];

  beforeAll(async () => {
    h = await startHarness();
    who = await h.account();
    const sink = { write: (line: string) => void lines.push(JSON.parse(line) as { msg?: string }) };
    logged = await buildApp(h.services, { loggerInstance: createLogger('debug', sink) });
    await logged.listen({ port: 0, host: '127.0.0.1' });
    port = (logged.server.address() as { port: number }).port;
  });
  afterAll(async () => {
    await logged?.close();
    await h?.close();
  });

  /** Sends the head and part of a body that announces more, then resets the connection. */
  async function dropMidBody(path: string, headers: Record<string, string>): Promise<void> {
    const socket = connect(port, '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    const head = [`POST ${path} HTTP/1.1`, 'Host: x', 'Content-Type: application/json', 'Content-Length: 1000', ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)];
    socket.write(`${head.join('\r\n')}\r\n\r\n{"client_id":"twc_`);
    await new Promise((resolve) => setTimeout(resolve, 50));
    socket.resetAndDestroy();
    await new Promise((resolve) => setTimeout(resolve, 200));
  }

  it('at the token endpoint and under /api, is not logged as a store outage', async () => {
    const token = await who.token();
    for (let i = 0; i < 3; i++) {
      await dropMidBody('/oauth/token', {});
      await dropMidBody('/api/events', { Authorization: `Bearer ${token}` });
    }
    const outages = lines.filter((line) => /store unavailable/.test(line.msg ?? ''));
    expect(outages).toEqual([]);
    // The server still answers.
    expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
  });
});

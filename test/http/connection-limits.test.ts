import { connect, type Socket } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { RECLAIM_SHARE } from '../../src/http/connection-limits.ts';
import { startHarness, type Harness } from '../support/harness.ts';
import { eventually, sleep } from '../support/eventually.ts';

/**
 * The probe's attack at a small scale: a limit of 64 connections and 16 per address instead of
 * 4,096 and 256. Clients come from several loopback addresses (all of 127.0.0.0/8 reaches the
 * server on Linux), as an attacker with a few addresses would.
 */
const MAX = 64;
const PER_ADDRESS = 16;

/** A raw client connection, as an attacker holds one. */
interface Held {
  socket: Socket;
  /** Whether the server answered its first request. */
  served: boolean;
  /** Whether the server has closed it. */
  closed: boolean;
}


/**
 * Connects from `from`, sends `request` (a keep-alive GET /healthz unless told), and waits for
 * the answer, or for the server to close the connection, or 10 s.
 */
function hold(port: number, from: string, request = 'GET /healthz HTTP/1.1\r\nHost: tollwatch.test\r\n\r\n', waitForAnswer = true): Promise<Held> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port, localAddress: from });
    const held: Held = { socket, served: false, closed: false };
    let received = '';
    const done = () => resolve(held);
    // Long enough for a loaded machine: a connection the server keeps or closes says so sooner.
    const timer = setTimeout(done, 10_000);
    socket.on('error', () => {});
    socket.on('close', () => {
      held.closed = true;
      clearTimeout(timer);
      done();
    });
    socket.on('connect', () => {
      socket.write(request);
      if (!waitForAnswer) {
        clearTimeout(timer);
        done();
      }
    });
    socket.on('data', (chunk) => {
      received += chunk.toString('latin1');
      if (/^HTTP\/1\.1 \d{3}/.test(received) && received.includes('\r\n\r\n') && !held.served) {
        held.served = true;
        clearTimeout(timer);
        done();
      }
    });
  });
}

describe('connection limits per address and overall (docs/operations.md, "Connections")', () => {
  let h: Harness;
  let port: number;
  const all: Held[] = [];
  const open = async (from: string, request?: string, waitForAnswer?: boolean) => {
    const held = await hold(port, from, request, waitForAnswer);
    all.push(held);
    return held;
  };

  beforeAll(async () => {
    h = await startHarness({ TOLLWATCH_MAX_CONNECTIONS: String(MAX), TOLLWATCH_MAX_CONNECTIONS_PER_ADDRESS: String(PER_ADDRESS) });
    port = Number(new URL(h.url).port);
  });
  afterEach(async () => {
    for (const held of all.splice(0)) held.socket.destroy();
    // The server sees every close before the next test counts.
    await eventually('the server to see every connection closed', () => new Promise<number>((resolve) => h.app.server.getConnections((_, n) => resolve(n))), (n) => n === 0);
  });
  afterAll(() => h?.close());

  it('one address holds no more than its cap: further connections from it are closed at once, others get in', async () => {
    const attacker: Held[] = [];
    for (let i = 0; i < PER_ADDRESS + 4; i++) attacker.push(await open('127.0.0.2'));
    await sleep(100);
    expect(attacker.filter((c) => c.served)).toHaveLength(PER_ADDRESS);
    expect(attacker.slice(0, PER_ADDRESS).every((c) => c.served && !c.closed)).toBe(true);
    expect(attacker.slice(PER_ADDRESS).every((c) => !c.served && c.closed)).toBe(true);

    // Another address is not held back by it.
    expect((await open('127.0.0.3')).served).toBe(true);
    // A connection the attacker gives up frees its place.
    attacker[0]!.socket.destroy();
    await eventually('the place it held to be free', () => open('127.0.0.2'), (c) => c.served);
    expect((await open('127.0.0.2')).served).toBe(false);
  });

  it('connections that have sent no request are never closed for room, and beyond the limit a newcomer is dropped', async () => {
    // Left to the 30 s connection timeout instead: such a connection may be a client about to speak.
    const silent: Held[] = [];
    for (let i = 0; i < MAX; i++) silent.push(await open(`127.0.0.${50 + (i % 4)}`, '', false));
    await sleep(100);
    expect(silent.some((c) => c.closed)).toBe(false);
    const newcomer = await open('127.0.0.60');
    expect(newcomer.served).toBe(false);
    expect(newcomer.closed).toBe(true);
  });

  it('a trusted proxy, which carries many clients, has no per-address cap', async () => {
    const behindProxy = await startHarness({
      TOLLWATCH_MAX_CONNECTIONS: String(MAX),
      TOLLWATCH_MAX_CONNECTIONS_PER_ADDRESS: String(PER_ADDRESS),
      TOLLWATCH_TRUST_PROXY: '127.0.0.40',
    });
    const proxyPort = Number(new URL(behindProxy.url).port);
    const held: Held[] = [];
    try {
      for (let i = 0; i < PER_ADDRESS + 4; i++) held.push(await hold(proxyPort, '127.0.0.40'));
      expect(held.every((c) => c.served && !c.closed)).toBe(true);
      // Any other peer still has one.
      for (let i = 0; i < PER_ADDRESS + 1; i++) held.push(await hold(proxyPort, '127.0.0.41'));
      expect(held.filter((c) => c.served)).toHaveLength(PER_ADDRESS + 4 + PER_ADDRESS);
    } finally {
      for (const c of held) c.socket.destroy();
      await behindProxy.close();
    }
  });

  it(`past ${RECLAIM_SHARE * 100}% of the limit, the longest-idle kept-alive connections are closed and a new client is served; a request in flight is never closed for room`, async () => {
    // The oldest connection of all is in the middle of a request: its body has not all arrived.
    const inFlight = await open(
      '127.0.0.30',
      'POST /oauth/token HTTP/1.1\r\nHost: tollwatch.test\r\nContent-Type: application/json\r\nContent-Length: 40\r\n\r\n{"grant_type":',
      false,
    );
    // Then idle kept-alive connections from four addresses, as many as the limit: without
    // reclaiming they would hold every place.
    const idle: Held[] = [];
    for (let i = 0; i < MAX; i++) idle.push(await open(`127.0.0.${10 + (i % 4)}`));
    expect(idle.every((c) => c.served)).toBe(true);

    const reclaimAbove = Math.floor(MAX * RECLAIM_SHARE);
    await eventually('the longest-idle connections to be closed', () => idle.filter((c) => c.closed).length, (n) => n >= MAX + 1 - reclaimAbove);
    const stillOpen = idle.filter((c) => !c.closed);
    expect(stillOpen.length + 1).toBe(reclaimAbove);
    // Closed oldest first: the closed ones are exactly the first ones opened.
    expect(idle.map((c) => c.closed)).toEqual(idle.map((_, i) => i < MAX + 1 - reclaimAbove));
    expect(inFlight.closed).toBe(false);

    // A newcomer gets in, and the longest-idle connection left makes room for it.
    const firstStillOpen = stillOpen[0]!;
    expect((await open('127.0.0.20')).served).toBe(true);
    await eventually('the longest-idle connection left to be closed for it', () => firstStillOpen.closed, Boolean);

    // The request in flight completes and is answered.
    const answered = new Promise<string>((resolve) => inFlight.socket.once('data', (chunk) => resolve(chunk.toString('latin1'))));
    inFlight.socket.write('"client_credentials"}'.padEnd(26, ' '));
    expect(await answered).toMatch(/^HTTP\/1\.1 4\d\d /);
  });
});

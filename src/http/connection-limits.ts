import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import { connectionNetwork } from '../domain/address-ranges.ts';

/**
 * The share of the connection limit beyond which idle kept-alive connections are closed, oldest
 * first. Node drops a connection over the limit before any code of ours sees it, so room must be
 * made before the limit is reached: at 90% (3,686 of 4,096) a tenth is left for new clients and
 * for requests in flight, which are never closed for room.
 */
export const RECLAIM_SHARE = 0.9;

/** The longest a count of refused and reclaimed connections waits to be logged, so an attack writes a line a minute, not one per connection. */
const REPORT_INTERVAL_MS = 60_000;

/** How connections are bounded (docs/operations.md, "Connections"). */
export interface ConnectionLimitSettings {
  /** Open connections of the process at most (TOLLWATCH_MAX_CONNECTIONS). */
  maxConnections: number;
  /** Open connections of one network at most (TOLLWATCH_MAX_CONNECTIONS_PER_ADDRESS). */
  perAddress: number;
  /** Peers without a per-address cap: trusted proxies, each carrying many clients. */
  exempt: (address: string) => boolean;
}

interface Tracked {
  /** The network it counts against; undefined for an exempt peer. */
  network: string | undefined;
  inFlight: number;
}

/** Where counts of refused and reclaimed connections are reported. */
export interface ConnectionLimitLog {
  warn(details: object, message: string): void;
}

/**
 * Bounds a server's connections so that one party cannot hold them all. Each new connection is
 * counted against its TCP peer's network (the socket's address, never a forwarded header: that
 * is what holds the socket), and closed at once beyond `perAddress`. Past RECLAIM_SHARE of
 * `maxConnections`, each new connection closes idle kept-alive ones (a request answered, none in
 * flight), the longest idle first: otherwise sockets that sent one request and wait out the 72 s
 * keep-alive keep every new client out. A connection that has not yet sent a request, or has
 * one in flight, is left to the request and header timeouts.
 */
export function limitConnections(server: Server, settings: ConnectionLimitSettings, log?: ConnectionLimitLog): void {
  server.maxConnections = settings.maxConnections;
  const reclaimAbove = Math.floor(settings.maxConnections * RECLAIM_SHARE);
  const perNetwork = new Map<string, number>();
  const sockets = new Map<Socket, Tracked>();
  /** Idle kept-alive sockets; a Set iterates in insertion order, so the first is the longest idle. */
  const idle = new Set<Socket>();
  let refused = 0;
  let reclaimed = 0;
  let reportedAt = 0;

  const report = () => {
    const now = Date.now();
    if (!log || now - reportedAt < REPORT_INTERVAL_MS) return;
    reportedAt = now;
    log.warn(
      { refusedPerAddress: refused, reclaimedIdle: reclaimed, open: sockets.size },
      'connection limits at work: connections refused over the per-address cap, idle kept-alive connections closed to let new clients in',
    );
    refused = 0;
    reclaimed = 0;
  };

  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress ?? '';
    const network = settings.exempt(address) ? undefined : connectionNetwork(address);
    if (network !== undefined) {
      const count = perNetwork.get(network) ?? 0;
      if (count >= settings.perAddress) {
        refused++;
        report();
        socket.destroy();
        return;
      }
      perNetwork.set(network, count + 1);
    }
    sockets.set(socket, { network, inFlight: 0 });
    socket.once('close', () => {
      sockets.delete(socket);
      idle.delete(socket);
      if (network === undefined) return;
      const left = (perNetwork.get(network) ?? 1) - 1;
      if (left > 0) perNetwork.set(network, left);
      else perNetwork.delete(network);
    });
    // A socket closed here leaves the count at once, not at its 'close' a moment later, so that
    // a burst of newcomers does not close more than it needs.
    let closed = 0;
    for (const oldest of idle) {
      if (sockets.size <= reclaimAbove) break;
      idle.delete(oldest);
      sockets.delete(oldest);
      oldest.destroy();
      closed++;
    }
    if (closed > 0) {
      reclaimed += closed;
      report();
    }
  });

  server.on('request', (request, response) => {
    const socket = request.socket;
    const tracked = sockets.get(socket);
    if (!tracked) return;
    tracked.inFlight++;
    idle.delete(socket);
    response.once('close', () => {
      tracked.inFlight--;
      // Re-added at the end: idle since now.
      if (tracked.inFlight === 0 && !socket.destroyed) idle.add(socket);
    });
  });
}

import { createSocket, type RemoteInfo, type Socket as UdpSocket } from 'node:dgram';
import { createServer, isIPv6, type Server, type Socket } from 'node:net';
import * as dnsPacket from 'dns-packet';
import type { Logger } from 'pino';
import { addressRanges } from '../domain/address-ranges.ts';
import type { DnsZones } from '../domain/dns/dns-zones.ts';
import type { Metrics } from '../metrics/metrics.ts';
import { formErr, respond, truncatedOnly, type Answered } from './dns-responder.ts';
import type { DnsSettings } from './dns-settings.ts';
import { ResponseRate } from './response-rate.ts';

/**
 * The authoritative DNS server of the two zones (docs/dns.md), on UDP and TCP at one address.
 * Off unless TOLLWATCH_DNS_LISTEN is set; started by src/server.ts beside the HTTP server.
 */
export interface DnsServer {
  host: string;
  port: number;
  close(): Promise<void>;
}

export interface DnsServerParts {
  zones: DnsZones;
  settings: Pick<DnsSettings, 'allow' | 'answersPerSecond'>;
  listen: { host: string; port: number };
  metrics: Metrics;
  log: Logger;
}

/** A TCP client idle this long is closed (RFC 7766 §6.2.3 leaves the choice to the server). */
const TCP_IDLE_MS = 10_000;
/** Open TCP connections at most: each holds a little memory, and TCP is the fallback, not the path. */
const MAX_TCP_CONNECTIONS = 256;

/** Binds UDP and TCP on the same port (with port 0, the one the system gives UDP) and answers. */
export async function startDnsServer(parts: DnsServerParts): Promise<DnsServer> {
  const { zones, settings, metrics, log } = parts;
  const allowed = rememberedRanges(addressRanges(settings.allow));
  const rate = new ResponseRate(settings.answersPerSecond);
  let udp: UdpSocket;

  const sent = (answered: Answered, transport: 'udp' | 'tcp') => {
    metrics.dnsAnswered(answered.zone ?? 'none', answered.rcode, transport, answered.truncated);
  };

  const onUdp = (message: Buffer, peer: RemoteInfo) => {
    const verdict = rate.verdict(peer.address);
    if (verdict === 'drop') return metrics.dnsLimited('drop');
    let query: dnsPacket.DecodedPacket;
    try {
      query = dnsPacket.decode(message);
    } catch {
      const refusal = verdict === 'answer' ? formErr(message) : undefined;
      if (refusal) udp.send(refusal, peer.port, peer.address);
      return metrics.dnsAnswered('none', 'FORMERR', 'udp', false);
    }
    if (verdict === 'truncate') {
      if (query.type !== 'response') udp.send(truncatedOnly(query), peer.port, peer.address);
      return metrics.dnsLimited('truncate');
    }
    const send = (answered: Answered | undefined) => {
      if (!answered) return;
      udp.send(answered.bytes, peer.port, peer.address);
      sent(answered, 'udp');
      if (log.isLevelEnabled('debug')) log.debug({ name: query.questions?.[0]?.name, type: query.questions?.[0]?.type, rcode: answered.rcode, transport: 'udp' }, 'dns answer');
    };
    // Answered at once when nothing is read from the store: no promise for most questions.
    const answered = respond(query, zones, 'udp', !allowed(peer.address));
    if (answered instanceof Promise) answered.then(send, (err: unknown) => log.warn({ err }, 'a DNS question over UDP failed'));
    else send(answered);
  };
  const openUdp = () => {
    const socket = createSocket({ type: isIPv6(parts.listen.host) ? 'udp6' : 'udp4' });
    socket.on('message', (message, peer) => {
      try {
        onUdp(message, peer);
      } catch (err) {
        log.warn({ err }, 'a DNS question over UDP failed');
      }
    });
    return socket;
  };

  const connections = new Set<Socket>();
  const tcp: Server = createServer((socket) => {
    if (connections.size >= MAX_TCP_CONNECTIONS) return void socket.destroy();
    connections.add(socket);
    socket.once('close', () => connections.delete(socket));
    socket.on('error', () => socket.destroy());
    socket.setTimeout(TCP_IDLE_MS, () => socket.destroy());
    const refuse = !allowed(socket.remoteAddress ?? '');
    let pending: Buffer = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
      // Each message has its length in two bytes in front (RFC 1035 §4.2.2); answers may go out
      // in any order, matched by their ids (RFC 7766 §6.2.1.1).
      while (pending.length >= 2 && pending.length >= 2 + pending.readUInt16BE(0)) {
        const framed = pending.subarray(0, 2 + pending.readUInt16BE(0));
        pending = pending.subarray(framed.length);
        onTcp(framed, socket, refuse).catch((err: unknown) => log.warn({ err }, 'a DNS question over TCP failed'));
      }
    });
  });
  const onTcp = async (framed: Buffer, socket: Socket, refuse: boolean) => {
    let query: dnsPacket.DecodedPacket;
    try {
      query = dnsPacket.streamDecode(framed) as dnsPacket.DecodedPacket;
    } catch {
      // The stream cannot be trusted past a message that does not parse.
      metrics.dnsAnswered('none', 'FORMERR', 'tcp', false);
      return void socket.destroy();
    }
    const answered = await respond(query, zones, 'tcp', refuse);
    if (!answered || socket.destroyed) return;
    socket.write(answered.bytes);
    sent(answered, 'tcp');
    if (log.isLevelEnabled('debug')) log.debug({ name: query.questions?.[0]?.name, type: query.questions?.[0]?.type, rcode: answered.rcode, transport: 'tcp' }, 'dns answer');
  };

  // UDP, then TCP on UDP's port. With port 0 the system picks UDP's, which TCP may find taken:
  // then both are tried again on another.
  let port: number;
  for (let attempt = 1; ; attempt++) {
    udp = openUdp();
    port = await bindUdp(udp, parts.listen);
    try {
      await listenTcp(tcp, port, parts.listen.host);
      break;
    } catch (err) {
      await new Promise<void>((resolve) => udp.close(() => resolve()));
      if (parts.listen.port !== 0 || attempt >= 5 || (err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
    }
  }
  udp.on('error', (err) => log.error({ err }, 'the DNS server’s UDP socket failed'));
  tcp.on('error', (err) => log.error({ err }, 'the DNS server’s TCP listener failed'));
  log.info({ host: parts.listen.host, port, zones: zones.settings.origins }, 'DNS zones are served');
  return {
    host: parts.listen.host,
    port,
    async close() {
      await new Promise<void>((resolve) => udp.close(() => resolve()));
      for (const socket of connections) socket.destroy();
      await new Promise<void>((resolve) => tcp.close(() => resolve()));
    },
  };
}

function bindUdp(udp: UdpSocket, listen: { host: string; port: number }): Promise<number> {
  return new Promise((resolve, reject) => {
    udp.once('error', reject);
    udp.bind(listen.port, listen.host, () => {
      udp.off('error', reject);
      resolve(udp.address().port);
    });
  });
}

function listenTcp(tcp: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    tcp.once('error', reject);
    tcp.listen(port, host, () => {
      tcp.off('error', reject);
      resolve();
    });
  });
}

/** Most client addresses whose allow-list verdict is remembered; the memory is emptied when full. */
const REMEMBERED_CLIENTS = 65_536;

/**
 * The allow-list's verdict per client address, remembered: a resolver asks from one address
 * thousands of times a second, and parsing it against the ranges each time showed in a profile
 * under bench/suites/dns.ts (docs/performance.md, "The DNS zones").
 */
function rememberedRanges(inRanges: (address: string) => boolean): (address: string) => boolean {
  const verdicts = new Map<string, boolean>();
  return (address) => {
    let verdict = verdicts.get(address);
    if (verdict === undefined) {
      if (verdicts.size >= REMEMBERED_CLIENTS) verdicts.clear();
      verdict = inRanges(address);
      verdicts.set(address, verdict);
    }
    return verdict;
  };
}

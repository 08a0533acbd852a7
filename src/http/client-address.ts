import type { IncomingMessage } from 'node:http';
import { addressRanges } from '../domain/address-ranges.ts';

/**
 * The client's address of a request Fastify has not taken yet, as its `request.ip` would read
 * it (@fastify/proxy-addr over TOLLWATCH_TRUST_PROXY): the peer's, or while the sender is a
 * trusted proxy, the `X-Forwarded-For` entry it added, from the right. For the direct lane
 * (http/lanes/direct-lookups.ts), which answers ahead of Fastify and tells the same "last API call".
 */
export function clientAddressOf(trustProxy: true | readonly string[] | undefined): (request: IncomingMessage) => string {
  if (!trustProxy) return (request) => request.socket.remoteAddress ?? '';
  const trusted = trustProxy === true ? () => true : addressRanges(trustProxy);
  return (request) => {
    let address = request.socket.remoteAddress ?? '';
    const header = request.headers['x-forwarded-for'];
    if (typeof header !== 'string') return address;
    const hops = header.split(',').map((hop) => hop.trim()).filter((hop) => hop !== '');
    while (hops.length > 0 && trusted(address)) address = hops.pop()!;
    return address;
  };
}

import { createSocket } from 'node:dgram';
import * as dnsPacket from 'dns-packet';

/**
 * The bare DNS responder the DNS bench measures Tollwatch's zones against (bench/suites/dns.ts): one
 * UDP socket answering every question with one answer built once at start, with nothing looked
 * up, parsed or logged. Each answer is that packet with the question's id in its first two bytes
 * (the one part of the wire format it writes itself: that is what "bare" means). Prints its port.
 *
 *     node bench/baselines/bare-dns-responder.ts [port]
 */
const FIXED = dnsPacket.encode({
  type: 'response',
  id: 0,
  flags: dnsPacket.AUTHORITATIVE_ANSWER,
  questions: [{ type: 'A', name: '2.3.5.8.1.1.2.1.8.6.4.numbers.tollwatch.internal' }],
  answers: [{ type: 'A', name: '2.3.5.8.1.1.2.1.8.6.4.numbers.tollwatch.internal', ttl: 60, data: '127.0.60.6' }],
});

const socket = createSocket('udp4');
socket.on('message', (query, peer) => {
  if (query.length < 2) return;
  const answer = Buffer.from(FIXED);
  query.copy(answer, 0, 0, 2);
  socket.send(answer, peer.port, peer.address);
});
socket.bind(Number(process.argv[2] ?? 0), '127.0.0.1', () => console.log(socket.address().port));

import * as dnsPacket from 'dns-packet';
import type { DnsZones, ZoneAnswer } from '../domain/dns/dns-zones.ts';

/**
 * One DNS question's answer as a packet: the protocol around the zones' answers (domain/
 * dns-zones.ts). Flags, EDNS(0), the size an answer may have over UDP, and what a question the
 * zones cannot take is answered. The bytes are dns-packet's; nothing here writes wire format.
 */

/** The largest UDP answer sent, whatever the client offers: the DNS Flag Day 2020 size, which no path fragments. */
export const MAX_UDP_PAYLOAD = 1232;
/** What a client without EDNS may receive over UDP (RFC 1035 §4.2.1). */
const PLAIN_UDP_PAYLOAD = 512;

/** The rcodes answered, with their numbers (RFC 1035 §4.1.1, RFC 6891 §9 for BADVERS). */
const RCODES = { NOERROR: 0, FORMERR: 1, SERVFAIL: 2, NXDOMAIN: 3, NOTIMP: 4, REFUSED: 5, BADVERS: 16 } as const;
export type AnsweredRcode = keyof typeof RCODES;

export interface Answered {
  /** The encoded answer, over TCP with its length in front. */
  bytes: Buffer;
  /** For the metrics: which zone, and the outcome. */
  zone: ZoneAnswer['zone'];
  rcode: AnsweredRcode;
  truncated: boolean;
}

type Query = dnsPacket.DecodedPacket & { opcode?: string };

/**
 * Answers a decoded query; undefined for a packet that must get no answer at all (a response,
 * which answering could loop between two servers). `udp` limits the size: over it, the answer
 * is sent empty with TC set, and the client asks again over TCP (RFC 7766).
 */
export function respond(query: Query, zones: DnsZones, transport: 'udp' | 'tcp', refuse = false): Answered | undefined | Promise<Answered> {
  if (query.type === 'response') return undefined;
  const questions = query.questions ?? [];
  const opts = (query.additionals ?? []).filter((a): a is dnsPacket.OptAnswer => a.type === 'OPT');
  const opt = opts[0];
  const base = (rcode: AnsweredRcode, answer: Pick<ZoneAnswer, 'answers' | 'authorities'> = { answers: [], authorities: [] }, authoritative = false): dnsPacket.Packet => ({
    type: 'response',
    id: query.id ?? 0,
    flags: (authoritative ? dnsPacket.AUTHORITATIVE_ANSWER : 0) | (query.flag_rd ? dnsPacket.RECURSION_DESIRED : 0) | (RCODES[rcode] & 0xf),
    questions,
    answers: answer.answers as dnsPacket.Answer[],
    authorities: answer.authorities as dnsPacket.Answer[],
    // RFC 6891 §7: a server that understands EDNS answers a query that has it with an OPT of its own.
    additionals: opt ? [{ type: 'OPT', name: '.', udpPayloadSize: MAX_UDP_PAYLOAD, extendedRcode: RCODES[rcode] >> 4, ednsVersion: 0, flags: 0, flag_do: false, options: [] }] : [],
  });
  const done = (rcode: AnsweredRcode, zone: ZoneAnswer['zone'] = undefined, packet = base(rcode)) => sized(packet, rcode, zone, transport === 'udp' ? udpLimit(opt) : undefined);

  if (refuse) return done('REFUSED');
  if ((query.opcode ?? 'QUERY') !== 'QUERY') return done('NOTIMP');
  if (questions.length !== 1 || opts.length > 1) return done('FORMERR');
  if (opt && opt.ednsVersion > 0) return done('BADVERS');
  const [question] = questions as [dnsPacket.Question];
  const klass = question.class ?? 'IN';
  // Zone transfers are not served: a mirror loads a zone file instead (docs/dns.md).
  if ((klass !== 'IN' && klass !== 'ANY') || question.type === 'AXFR' || question.type === 'IXFR') return done('REFUSED');
  const answered = (answer: ZoneAnswer) => done(answer.rcode, answer.zone, base(answer.rcode, answer, answer.rcode !== 'REFUSED'));
  // The store unreachable is SERVFAIL: resolvers try again, and keep no negative answer for it.
  let answer: ZoneAnswer | Promise<ZoneAnswer>;
  try {
    answer = zones.answer(question.name, question.type);
  } catch {
    return done('SERVFAIL');
  }
  // A promise only when the store is read (domain/dns/dns-zones.ts): most answers go out without one.
  return answer instanceof Promise ? answer.then(answered, () => done('SERVFAIL')) : answered(answer);
}

/** The size a UDP answer may have: what the client's EDNS offers, between 512 and ours. */
function udpLimit(opt: dnsPacket.OptAnswer | undefined): number {
  if (!opt) return PLAIN_UDP_PAYLOAD;
  return Math.min(MAX_UDP_PAYLOAD, Math.max(PLAIN_UDP_PAYLOAD, opt.udpPayloadSize));
}

function sized(packet: dnsPacket.Packet, rcode: AnsweredRcode, zone: ZoneAnswer['zone'], limit: number | undefined): Answered {
  // Over TCP, with the two-byte length in front (RFC 1035 §4.2.2), and never truncated.
  if (limit === undefined) return { bytes: dnsPacket.streamEncode(packet), zone, rcode, truncated: false };
  const bytes = dnsPacket.encode(packet);
  if (bytes.length <= limit) return { bytes, zone, rcode, truncated: false };
  // Nothing partial: a resolver could cache part of a record set as if it were all of it.
  const empty = dnsPacket.encode({ ...packet, flags: (packet.flags ?? 0) | dnsPacket.TRUNCATED_RESPONSE, answers: [], authorities: [] });
  return { bytes: empty, zone, rcode, truncated: true };
}

/** The empty, truncated answer the rate limit sends instead of an answer ("slip"), so a real client asks again over TCP. */
export function truncatedOnly(query: Query): Buffer {
  return dnsPacket.encode({
    type: 'response',
    id: query.id ?? 0,
    flags: dnsPacket.TRUNCATED_RESPONSE | (query.flag_rd ? dnsPacket.RECURSION_DESIRED : 0),
    questions: query.questions ?? [],
  });
}

/** The FORMERR of a query whose header could be read but not the rest; undefined when even the header cannot. */
export function formErr(bytes: Buffer): Buffer | undefined {
  let header: dnsPacket.DecodedPacket;
  try {
    // The header alone, its counts zeroed: the rest is what failed to decode.
    header = dnsPacket.decode(Buffer.concat([bytes.subarray(0, 4), Buffer.alloc(8)]));
  } catch {
    return undefined;
  }
  if (bytes.length < 12 || header.type === 'response') return undefined;
  return dnsPacket.encode({ type: 'response', id: header.id ?? 0, flags: RCODES.FORMERR });
}

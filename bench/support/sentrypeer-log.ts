import { randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { poolNumber } from './generate-events.ts';

/** Deterministic pseudo-random numbers (mulberry32), so that every run writes the same kind of log. */
function random32(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const METHODS = ['INVITE', 'INVITE', 'INVITE', 'OPTIONS', 'REGISTER'];
const AGENTS = ['friendly-scanner', 'sipvicious', 'VaxSIPUserAgent/3.1', 'NOT_FOUND', 'pplsip', ''];

/** How a generated log is spread. */
export interface LogShape {
  events: number;
  /** Distinct called numbers; a few are hammered, most probed rarely (as bench/support/generate-events.ts). */
  numbers: number;
  /** Distinct source addresses, skewed the same way. */
  addresses: number;
  seed: number;
}

/**
 * The lines of a SentryPeer JSON log as a node writes it (test/fixtures/sentrypeer_json.log):
 * 13 fields, random v4 event uuids as the node makes them, times over the 90 days before
 * `until`, numbers in both international forms, and a SIP message of about 400 bytes.
 */
export function* sentryPeerLogLines(shape: LogShape, until = Date.now() - 86_400_000): Generator<string> {
  const random = random32(shape.seed);
  for (let i = 0; i < shape.events; i++) {
    const n = Math.floor(random() ** 2 * shape.numbers);
    const international = poolNumber(n);
    const called = random() < 0.5 ? international : `00${international.slice(1)}`;
    const a = Math.floor(random() ** 2 * shape.addresses);
    const ip = `198.${18 + (a >> 16)}.${(a >> 8) & 255}.${a & 255}`;
    const iso = new Date(until - Math.floor(random() * 90 * 86_400_000)).toISOString();
    const timestamp = `${iso.slice(0, 10)} ${iso.slice(11, 23)}${String(Math.floor(random() * 1e6)).padStart(6, '0')}`;
    const method = METHODS[Math.floor(random() * METHODS.length)]!;
    const agent = AGENTS[Math.floor(random() * AGENTS.length)]!;
    yield JSON.stringify({
      app_name: 'sentrypeer',
      app_version: '4.0.6',
      event_timestamp: timestamp,
      event_uuid: randomUUID(),
      created_by_node_id: '1aa3d549-39ac-4457-92fc-1a7bb4044eea',
      collected_method: 'responsive',
      transport_type: random() < 0.8 ? 'UDP' : 'TCP',
      source_ip: ip,
      destination_ip: '192.0.2.1',
      called_number: called,
      sip_method: method,
      sip_user_agent: agent,
      sip_message:
        `${method} sip:${called}@192.0.2.1 SIP/2.0\r\nVia: SIP/2.0/UDP ${ip}:5060;branch=z9hG4bK${i.toString(16)};rport\r\n` +
        `From: "100" <sip:100@${ip}>;tag=${i.toString(36)}\r\nTo: <sip:${called}@192.0.2.1>\r\nCall-ID: ${i}@${ip}\r\n` +
        `CSeq: 1 ${method}\r\nUser-agent: ${agent}\r\nContent-Length: 0\r\n\r\n`,
    });
  }
}

/** Writes a generated SentryPeer JSON log to `path`. */
export async function writeSentryPeerLog(path: string, shape: LogShape): Promise<void> {
  const out = createWriteStream(path);
  for (const line of sentryPeerLogLines(shape)) {
    if (!out.write(`${line}\n`)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
}

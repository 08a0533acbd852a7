import { validateHoneypotEvent } from '../src/domain/honeypot-event.ts';
import { canonicalIpAddress } from '../src/domain/ip-address.ts';
import { parseEventTimestamp } from '../src/domain/event-timestamp.ts';
import { normalisePhoneNumber } from '../src/domain/phone-number.ts';
import { randomUUID, createHash } from 'node:crypto';
const now = new Date();
const mk = (i: number) => ({
  app_name: 'sentrypeer', app_version: 'v4.0.4', event_timestamp: new Date().toISOString().replace('T', ' ').replace('Z', '') + '000',
  event_uuid: randomUUID(), created_by_node_id: randomUUID(), collected_method: 'responsive', transport_type: 'UDP',
  source_ip: `203.0.${i % 250}.${(i * 7) % 250}`, destination_ip: '192.0.2.10', called_number: `0046812${String(100000 + (i % 90000))}`,
  sip_method: 'INVITE', sip_user_agent: 'friendly-scanner', sip_message: 'INVITE sip:100@192.0.2.10 SIP/2.0\r\n...',
});
const N = 200000;
const bodies = Array.from({ length: N }, (_, i) => JSON.parse(JSON.stringify(mk(i))));
console.log(validateHoneypotEvent(bodies[0], now));
function time(name: string, f: (b: any, i: number) => unknown) {
  for (let r = 0; r < 3; r++) {
    const t = process.hrtime.bigint();
    for (let i = 0; i < N; i++) f(bodies[i], i);
    const us = Number(process.hrtime.bigint() - t) / 1000 / N;
    if (r === 2) console.log(name, us.toFixed(2), 'µs');
  }
}
time('validate', (b) => validateHoneypotEvent(b, now));
time('ip', (b) => canonicalIpAddress(b.source_ip));
time('ts', (b) => parseEventTimestamp(b.event_timestamp, now));
time('phone', (b) => normalisePhoneNumber(b.called_number));
time('hash', (b) => createHash('sha256').update(JSON.stringify(Object.values(b))).digest('hex'));
time('parse', (b) => JSON.parse(JSON.stringify(b)));

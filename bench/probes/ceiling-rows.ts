import { randomUUID } from 'node:crypto';

/**
 * Event rows of the benchmark's shape, ready to insert: random v4 uuids, 200,000 numbers and
 * 50,000 addresses as in bench/suites/import.ts, a 60-byte SIP message. For the store-ceiling programs,
 * which time the store's own work with nothing of the service around it.
 */
export function ceilingRows(accountId: string, events: number) {
  return Array.from({ length: events }, (_, i) => {
    const number = `+46${String(700_000_000 + ((i * 7919) % 200_000))}`;
    return {
      account_id: accountId,
      event_uuid: randomUUID(),
      app_name: 'sentrypeer',
      app_version: '4.0.6',
      event_timestamp: '2026-11-20 10:00:00.123456',
      created_by_node_id: '732e7f50-637d-4fde-81e0-5c32f1bb5a92',
      collected_method: 'responsive',
      transport_type: 'UDP',
      source_ip: `10.0.${((i * 104_729) % 50_000) >> 8}.${((i * 104_729) % 50_000) & 255}`,
      destination_ip: '192.0.2.1',
      called_number: number,
      sip_method: 'INVITE',
      sip_user_agent: 'friendly-scanner',
      sip_message: 'INVITE sip:100@192.0.2.1 SIP/2.0\r\nCSeq: 1 INVITE\r\n\r\n',
      event_time: `2026-11-20T10:00:00.${String(i % 1e9).padStart(9, '0')}Z`,
      number_key: number,
      number_written: number,
      content_hash: randomUUID().replaceAll('-', ''),
      received_at: new Date().toISOString(),
    };
  });
}

export type CeilingRow = ReturnType<typeof ceilingRows>[number];

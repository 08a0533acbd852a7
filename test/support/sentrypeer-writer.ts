/**
 * Writes probes into a SentryPeer database as a running node does: one autocommit INSERT per
 * probe, rollback journal, and no busy timeout, so any lock held by a reader at commit time
 * fails the insert with SQLITE_BUSY and the probe is lost. Run as its own process:
 *
 *   node test/support/sentrypeer-writer.ts <database> <pause-ms>
 *
 * Writes until SIGTERM, then prints `{"inserted":n,"busy":n}`.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import SQLiteDatabase from 'better-sqlite3';

const [path, pause = '2'] = process.argv.slice(2);
const db = new SQLiteDatabase(path!, { timeout: 0 });
const insert = db.prepare(`INSERT INTO honey (event_timestamp, event_uuid, collected_method, source_ip, called_number, transport_type, method, user_agent, sip_message, created_by_node_id)
  VALUES (?, ?, 'responsive', ?, ?, 'UDP', 'OPTIONS', 'friendly-scanner', ?, '11111111-1111-4111-8111-111111111111')`);
let stopped = false;
process.on('SIGTERM', () => (stopped = true));
let inserted = 0;
let busy = 0;
for (let i = 0; !stopped; i++) {
  const now = new Date().toISOString().replace('T', ' ').replace('Z', '');
  try {
    insert.run(now, crypto.randomUUID(), `198.51.100.${i % 250}`, `+4420718${String(i).padStart(5, '0')}`, `OPTIONS sip:${i}@198.51.100.1 SIP/2.0\r\n\r\n`);
    inserted += 1;
  } catch (err) {
    if ((err as { code?: string }).code !== 'SQLITE_BUSY') throw err;
    busy += 1;
  }
  await sleep(Number(pause));
}
db.close();
process.stdout.write(`${JSON.stringify({ inserted, busy })}\n`);

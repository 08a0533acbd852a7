import { createReadStream } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import SQLiteDatabase from 'better-sqlite3';
import { ServiceError } from '../domain/errors.ts';
import type { ImportRecord, ImportSource } from './event-import.ts';
import { UnreadableItem } from '../domain/events/event-intake.ts';
import { canonicalIpAddress } from '../domain/ip-address.ts';
import { lockFreeSnapshot } from './sqlite-snapshot.ts';

/**
 * What a SentryPeer database does not keep, and an imported event needs (docs/api.md §5): its
 * `honey` table has no `app_name`, `app_version` or `destination_ip`.
 */
export interface DatabaseDefaults {
  /** `app_version` of every imported row; the database does not say which version wrote it. */
  appVersion: string;
  /** `destination_ip` of every imported row: the node's address, which the database does not keep. */
  destinationIp: string;
}

/** "SQLite format 3" and a NUL: the first 16 bytes of every SQLite database file. */
const SQLITE_MAGIC = Buffer.from('SQLite format 3\u0000', 'latin1');

/**
 * Opens a SentryPeer export for import: its SQLite database (told by the file's first bytes),
 * or else its JSON log, one event per line.
 */
export async function openImportSource(path: string, defaults: DatabaseDefaults): Promise<ImportSource> {
  // Checked before anything is read: a bad default would make every row of a database invalid.
  if (!canonicalIpAddress(defaults.destinationIp)) throw new ServiceError('validation_failed', `--destination-ip ${JSON.stringify(defaults.destinationIp)} is not an IPv4 or IPv6 address`);
  if (defaults.appVersion === '' || defaults.appVersion.length > 1024) throw new ServiceError('validation_failed', '--app-version must be 1 to 1,024 characters');
  const head = Buffer.alloc(SQLITE_MAGIC.length);
  const file = await open(path, 'r').catch((err: NodeJS.ErrnoException) => {
    throw new ServiceError('not_found', `cannot read ${path}: ${err.code === 'ENOENT' ? 'no such file' : err.message}`);
  });
  try {
    await file.read(head, 0, head.length, 0);
  } finally {
    await file.close();
  }
  return head.equals(SQLITE_MAGIC) ? openSentryPeerDatabase(path, defaults) : openSentryPeerLog(path);
}

/** A SentryPeer JSON log (`-j`, `-l <path>`): one JSON object per line; progress in bytes. */
async function openSentryPeerLog(path: string): Promise<ImportSource> {
  const size = (await stat(path)).size;
  const stream = createReadStream(path);
  return {
    kind: 'sentrypeer-log',
    size,
    done: () => stream.bytesRead,
    async *records(): AsyncGenerator<ImportRecord> {
      let position = 0;
      for await (const line of createInterface({ input: stream, crlfDelay: Infinity })) {
        position += 1;
        if (line.trim() === '') continue;
        let item: unknown;
        try {
          item = JSON.parse(line);
        } catch {
          item = new UnreadableItem('is not valid JSON');
        }
        yield { position, item };
      }
    },
    close: async () => {
      stream.destroy();
    },
  };
}

/**
 * The columns of SentryPeer's `honey` table, as the node creates it (its statement is copied in
 * test/cli/import.test.ts; unchanged since the table was introduced): the event's fields under
 * their own names, but `method` and `user_agent` for `sip_method` and `sip_user_agent`.
 */
const HONEY_QUERY = `select honey_id, event_timestamp, event_uuid, collected_method, source_ip, called_number,
  transport_type, method, user_agent, sip_message, created_by_node_id from honey order by honey_id`;

/** One row of `honey`, as read. */
interface HoneyRow {
  honey_id: number;
  event_timestamp: unknown;
  event_uuid: unknown;
  collected_method: unknown;
  source_ip: unknown;
  called_number: unknown;
  transport_type: unknown;
  method: unknown;
  user_agent: unknown;
  sip_message: unknown;
  created_by_node_id: unknown;
}

/**
 * A SentryPeer database (`-f <path>`, `sentrypeer.db`), read-only, row by row in `honey_id`
 * order; progress in rows. A NULL column becomes "", as the node writes it in its JSON log, and
 * is then judged by the field's rule like any other value.
 *
 * A running node keeps writing it, with no busy timeout: it reads a lock-free snapshot, so the
 * node never finds its database locked (and never loses a probe) while an import runs. Rows the
 * node adds after the snapshot come with the next import; those already stored are replays.
 */
async function openSentryPeerDatabase(path: string, defaults: DatabaseDefaults): Promise<ImportSource> {
  const snapshot = await lockFreeSnapshot(path).catch((err: Error) => {
    throw new ServiceError('unavailable', err.message);
  });
  const db = new SQLiteDatabase(snapshot.path, { readonly: true, fileMustExist: true });
  const close = async () => {
    db.close();
    await snapshot.dispose();
  };
  let rows: number;
  let statement: SQLiteDatabase.Statement;
  try {
    rows = (db.prepare('select count(*) from honey').pluck().get() as number) ?? 0;
    statement = db.prepare(HONEY_QUERY);
  } catch (err) {
    await close();
    throw new ServiceError('validation_failed', `${path} is a SQLite database but not a SentryPeer one (no honey table as SentryPeer writes it): ${(err as Error).message}`);
  }
  let done = 0;
  const text = (value: unknown) => (value === null || value === undefined ? '' : String(value));
  return {
    kind: 'sentrypeer-database',
    size: rows,
    done: () => done,
    async *records(): AsyncGenerator<ImportRecord> {
      for (const row of statement.iterate() as IterableIterator<HoneyRow>) {
        done += 1;
        yield {
          position: row.honey_id,
          item: {
            app_name: 'sentrypeer',
            app_version: defaults.appVersion,
            event_timestamp: text(row.event_timestamp),
            event_uuid: text(row.event_uuid),
            created_by_node_id: text(row.created_by_node_id),
            collected_method: text(row.collected_method),
            transport_type: text(row.transport_type),
            source_ip: text(row.source_ip),
            destination_ip: defaults.destinationIp,
            called_number: text(row.called_number),
            sip_method: text(row.method),
            sip_user_agent: text(row.user_agent),
            sip_message: text(row.sip_message),
          },
        };
      }
    },
    close,
  };
}

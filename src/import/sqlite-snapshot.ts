import { copyFile, mkdtemp, open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import SQLiteDatabase from 'better-sqlite3';

/** A SQLite database to read while its owner keeps writing it; `dispose` removes any copy. */
export interface SqliteSnapshot {
  path: string;
  /** Whether `path` is a copy taken for this read (rollback-journal databases) or the file itself (WAL). */
  copied: boolean;
  dispose(): Promise<void>;
}

/** The 100-byte database header's fields this needs (sqlite.org/fileformat2.html, §1.3). */
interface Header {
  /** 2 in WAL mode, 1 with a rollback journal. */
  writeVersion: number;
  /** The file change counter: in rollback-journal mode, incremented by every committed write. */
  changeCounter: number;
}

async function readHeader(path: string): Promise<Header> {
  const file = await open(path, 'r');
  try {
    const head = Buffer.alloc(100);
    await file.read(head, 0, 100, 0);
    return { writeVersion: head[18]!, changeCounter: head.readUInt32BE(24) };
  } finally {
    await file.close();
  }
}

/**
 * Whether a rollback journal is live: a writer is changing the file (or one crashed doing so).
 * DELETE mode removes the journal at commit, TRUNCATE empties it, PERSIST zeroes its header.
 */
async function journalLive(path: string): Promise<boolean> {
  let file;
  try {
    file = await open(`${path}-journal`, 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
  try {
    const head = Buffer.alloc(28);
    const { bytesRead } = await file.read(head, 0, 28, 0);
    return head.subarray(0, bytesRead).some((byte) => byte !== 0);
  } finally {
    await file.close();
  }
}

export interface SnapshotOptions {
  /** How long to keep trying on a database that changes during every copy (a node under a scan). */
  patienceMs?: number;
}

/**
 * A consistent view of a SQLite database that another process is writing, taken without ever
 * holding one of SQLite's locks on it. A reader's shared lock makes a rollback-journal writer's
 * commit fail at once when it has no busy timeout, as a SentryPeer node does (it then loses the
 * probe), however short the read. So the file is copied with plain reads and the copy kept only
 * when nothing was committed meanwhile: the change counter is the same before and after, and no
 * journal was live at either end (a writer changes the file only while its journal is live, and
 * a commit always moves the counter). In WAL mode readers never block writers: the file is read
 * in place.
 */
export async function lockFreeSnapshot(path: string, options: SnapshotOptions = {}): Promise<SqliteSnapshot> {
  const first = await readHeader(path);
  if (first.writeVersion === 2) return { path, copied: false, dispose: async () => {} };
  const dir = await mkdtemp(join(tmpdir(), 'tollwatch-snapshot-'));
  const copy = join(dir, 'snapshot.db');
  const dispose = () => rm(dir, { recursive: true, force: true });
  const deadline = Date.now() + (options.patienceMs ?? 120_000);
  let attempts = 0;
  try {
    while (Date.now() < deadline) {
      attempts += 1;
      const before = await readHeader(path);
      if (!(await journalLive(path))) {
        await copyFile(path, copy);
        const after = await readHeader(path);
        const unchanged = after.changeCounter === before.changeCounter && !(await journalLive(path));
        if (unchanged && (await readHeader(copy)).changeCounter === before.changeCounter && intact(copy)) {
          return { path: copy, copied: true, dispose };
        }
      }
      // A writer was busy: try again in a moment, at a different phase of its rhythm.
      await sleep(10 + Math.random() * 90);
    }
  } catch (err) {
    await dispose();
    throw err;
  }
  await dispose();
  throw new Error(
    `${path} changed during each of ${attempts} copies (or a crashed writer left ${path}-journal): stop the process writing it, or copy it yourself while it is stopped, and import the copy`,
  );
}

/**
 * Belt and braces: a write rolled back after touching the file (a full disk) leaves the counter
 * and no journal as they were, so a copy taken meanwhile is checked for structural damage.
 */
function intact(path: string): boolean {
  let db: SQLiteDatabase.Database | undefined;
  try {
    db = new SQLiteDatabase(path, { readonly: true, fileMustExist: true });
    return db.pragma('quick_check', { simple: true }) === 'ok';
  } catch {
    return false;
  } finally {
    db?.close();
  }
}

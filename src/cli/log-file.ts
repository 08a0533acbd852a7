import { createHash } from 'node:crypto';
import { open, readdir, stat, type FileHandle } from 'node:fs/promises';
import { dirname, join } from 'node:path';

/** Which file this is, as the file system tells files apart: a renamed file keeps it, a recreated one does not. */
export interface FileIdentity {
  dev: string;
  ino: string;
}

/** One complete line of a log: its number (from 1), its text, and the byte offset just past its newline. */
export interface LogLine {
  number: number;
  /** Undefined for a line longer than MAX_LINE_BYTES, which is skipped unread. */
  text: string | undefined;
  end: number;
}

/**
 * The longest line read. An event's `sip_message` is at most 65,535 bytes (docs/api.md §5); JSON
 * escapes a control character in 6 bytes, so a valid event's line stays under 400 KB. A longer
 * line cannot be a valid event, and a bound keeps a corrupt log from filling memory.
 */
export const MAX_LINE_BYTES = 1024 * 1024;

/** Bytes at the start of a log hashed to recognise it again: enough to cover its first event. */
export const FINGERPRINT_BYTES = 1024;

/** Bytes of lines gathered for one batch at most: well within the 16 MiB of one batch request (docs/api.md §5). */
const BATCH_BYTES = 4 * 1024 * 1024;

const NEWLINE = 0x0a;

/**
 * An open log file, read by byte offset. The handle stays on the file it opened: after the log
 * is renamed away (rotated), it still reads the old file to its end.
 */
export class LogFile {
  /** The path it was opened by (the file may have been renamed since). */
  readonly path: string;
  readonly identity: FileIdentity;
  private readonly handle: FileHandle;
  private readonly buffer = Buffer.allocUnsafe(MAX_LINE_BYTES);

  private constructor(path: string, identity: FileIdentity, handle: FileHandle) {
    this.path = path;
    this.identity = identity;
    this.handle = handle;
  }

  /** Opens a log for reading; undefined when there is no file at `path`. */
  static async open(path: string): Promise<LogFile | undefined> {
    let handle: FileHandle;
    try {
      handle = await open(path, 'r');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
    const s = await handle.stat({ bigint: true });
    return new LogFile(path, { dev: String(s.dev), ino: String(s.ino) }, handle);
  }

  /** The file's size now. */
  async size(): Promise<number> {
    return Number((await this.handle.stat()).size);
  }

  /** SHA-256 of the file's first `bytes` bytes, or undefined when it holds fewer. */
  async fingerprint(bytes: number): Promise<string | undefined> {
    const head = Buffer.alloc(bytes);
    const { bytesRead } = bytes === 0 ? { bytesRead: 0 } : await this.handle.read(head, 0, bytes, 0);
    return bytesRead < bytes ? undefined : createHash('sha256').update(head).digest('hex');
  }

  /**
   * The complete lines from `offset` on (a line is complete once its newline is written), at
   * most `maxLines` and about 4 MiB of them; the first is numbered `firstNumber`. A last line
   * still being written is left for a later call.
   */
  async readLines(offset: number, firstNumber: number, maxLines: number): Promise<LogLine[]> {
    const lines: LogLine[] = [];
    let position = offset;
    let bytes = 0;
    while (lines.length < maxLines && bytes < BATCH_BYTES) {
      const { bytesRead } = await this.handle.read(this.buffer, 0, this.buffer.length, position);
      if (bytesRead === 0) break;
      const chunk = this.buffer.subarray(0, bytesRead);
      let start = 0;
      while (lines.length < maxLines && bytes < BATCH_BYTES) {
        const newline = chunk.indexOf(NEWLINE, start);
        if (newline < 0) break;
        lines.push({ number: firstNumber + lines.length, text: chunk.toString('utf8', start, newline), end: position + newline + 1 });
        bytes += newline + 1 - start;
        start = newline + 1;
      }
      if (start === 0) {
        // A whole buffer without a newline: a line too long to be an event, or the last line
        // being written. Skip it once its end is there; otherwise wait for more.
        if (bytesRead < this.buffer.length) break;
        const end = await this.endOfLine(position + bytesRead);
        if (end === undefined) break;
        lines.push({ number: firstNumber + lines.length, text: undefined, end });
        position = end;
        continue;
      }
      position += start;
      // The rest of a short read is a partial line: nothing more to read now.
      if (bytesRead < this.buffer.length) break;
    }
    return lines;
  }

  async close(): Promise<void> {
    await this.handle.close();
  }

  /** The offset just past the next newline at or after `from`, or undefined when there is none yet. */
  private async endOfLine(from: number): Promise<number | undefined> {
    for (let position = from; ; ) {
      const { bytesRead } = await this.handle.read(this.buffer, 0, this.buffer.length, position);
      if (bytesRead === 0) return undefined;
      const newline = this.buffer.subarray(0, bytesRead).indexOf(NEWLINE);
      if (newline >= 0) return position + newline + 1;
      position += bytesRead;
    }
  }
}

/** The identity of whatever `path` names now, or undefined when it names nothing. */
export async function identityOf(path: string): Promise<FileIdentity | undefined> {
  try {
    const s = await stat(path, { bigint: true });
    return { dev: String(s.dev), ino: String(s.ino) };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/** Whether two identities name the same file. */
export function sameFile(a: FileIdentity, b: FileIdentity): boolean {
  return a.dev === b.dev && a.ino === b.ino;
}

/**
 * The file beside `logPath` that has `identity`: where a rotated log went (`sentrypeer_json.log.1`,
 * say) while nothing was shipping it. Undefined when it is no longer in that folder.
 */
export async function findRotated(logPath: string, identity: FileIdentity): Promise<string | undefined> {
  const folder = dirname(logPath);
  let names: string[];
  try {
    names = await readdir(folder);
  } catch {
    return undefined;
  }
  for (const name of names) {
    const candidate = join(folder, name);
    const found = await identityOf(candidate).catch(() => undefined);
    if (found && sameFile(found, identity)) return candidate;
  }
  return undefined;
}

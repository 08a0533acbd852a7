import { open, readFile, rename, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { ApiCommandError } from './api-client.ts';
import type { FileIdentity } from './log-file.ts';

/**
 * How far `tollwatch ship` has got in a log: the file (by identity, and by a hash of its first
 * bytes, since a deleted file's inode number may be given to a new one) and the byte offset up
 * to which every line has been acknowledged by the server.
 */
export interface ShipState extends FileIdentity {
  version: 1;
  /** The log's path when the state was written (informative: the file is found by identity). */
  log: string;
  /** Bytes of the file acknowledged: every line before this offset was answered by the server. */
  offset: number;
  /** Lines before `offset`, so that reports keep numbering lines from the top of the file. */
  line: number;
  /** SHA-256 of the file's first `fingerprint_bytes` bytes (at most FINGERPRINT_BYTES, never past `offset`). */
  fingerprint: string | null;
  fingerprint_bytes: number;
  updated_at: string;
}

/** Where the state of a log is kept unless `--state` says otherwise: beside the log. */
export function defaultStatePath(logPath: string): string {
  return join(dirname(logPath), `${basename(logPath)}.tollwatch-state`);
}

/** Reads a state file; undefined when there is none yet. */
export async function readShipState(path: string): Promise<ShipState | undefined> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  let state: Partial<ShipState> | undefined;
  try {
    state = JSON.parse(text) as Partial<ShipState>;
  } catch {
    state = undefined;
  }
  if (
    state?.version !== 1 ||
    typeof state.dev !== 'string' ||
    typeof state.ino !== 'string' ||
    !Number.isSafeInteger(state.offset) ||
    !Number.isSafeInteger(state.line) ||
    !Number.isSafeInteger(state.fingerprint_bytes) ||
    (state.fingerprint !== null && typeof state.fingerprint !== 'string')
  ) {
    throw new ApiCommandError(`${path} is not a state file of tollwatch ship; move it away, or name another with --state`);
  }
  return state as ShipState;
}

/**
 * Replaces the state file atomically and durably: the new content goes to a temporary file
 * beside it, is flushed to disk, and is renamed over the old one, and the folder is flushed so
 * that the rename survives a power cut. A crash at any moment leaves the old state or the new,
 * never a torn one.
 */
export async function writeShipState(path: string, state: ShipState): Promise<void> {
  const temporary = `${path}.${process.pid}.tmp`;
  try {
    const file = await open(temporary, 'w', 0o600);
    try {
      await file.writeFile(`${JSON.stringify(state)}\n`);
      await file.sync();
    } finally {
      await file.close();
    }
    await rename(temporary, path);
  } catch (err) {
    await unlink(temporary).catch(() => {});
    throw err;
  }
  const folder = await open(dirname(path), 'r');
  try {
    await folder.sync();
  } catch {
    // Some file systems cannot flush a folder; the rename is still atomic there.
  } finally {
    await folder.close();
  }
}

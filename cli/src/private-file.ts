import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

/**
 * Writes a file of the CLI's own (a token, a sync's state) readable by the owner only, in a
 * directory likewise: whole, then renamed into place, so that runs side by side never read half
 * of one.
 */
export function writePrivateFile(path: string, text: string): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const partial = `${path}.${process.pid}.tmp`;
  writeFileSync(partial, text, { mode: 0o600 });
  renameSync(partial, path);
}

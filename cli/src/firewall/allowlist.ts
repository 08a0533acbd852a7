import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { BlockList, isIP } from 'node:net';
import { UsageError } from '../settings.ts';

/** The addresses and ranges `--allow` keeps out of the sets, and what identifies them. */
export interface Allowlist {
  /** Whether `address` (IPv4 or IPv6, as `isIP` tells) is allowed, so never put in a set. */
  allows(address: string): boolean;
  /** A digest of the files' content: a changed allowlist is a reason to apply the feed again. */
  digest: string;
}

/**
 * Reads allowlist files: one address or CIDR range a line (`203.0.113.7`, `198.51.100.0/24`,
 * `2001:db8::/32`), `#` to the end of a line a comment, blank lines skipped. A line that is
 * neither is refused with its file and number, before anything is fetched or applied. Node's own
 * BlockList does the matching, so the CLI still installs with no dependency.
 */
export function readAllowlists(paths: readonly string[]): Allowlist {
  const list = new BlockList();
  const hash = createHash('sha256');
  for (const path of paths) {
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (err) {
      throw new UsageError(`--allow ${path}: ${(err as Error).message}`);
    }
    hash.update(`${path}\0${text}\0`);
    text.split(/\r?\n/).forEach((raw, index) => {
      const line = raw.replace(/#.*/, '').trim();
      if (line === '') return;
      if (!addLine(list, line)) throw new UsageError(`--allow ${path} line ${index + 1}: not an address or a CIDR range: ${JSON.stringify(line)}`);
    });
  }
  return { allows: (address) => list.check(address, isIP(address) === 6 ? 'ipv6' : 'ipv4'), digest: hash.digest('hex') };
}

function addLine(list: BlockList, line: string): boolean {
  const [address = '', prefix, extra] = line.split('/');
  const version = isIP(address);
  if (version === 0 || extra !== undefined) return false;
  const type = version === 6 ? 'ipv6' : 'ipv4';
  if (prefix === undefined) {
    list.addAddress(address, type);
    return true;
  }
  const bits = Number(prefix);
  if (!/^\d{1,3}$/.test(prefix) || bits > (version === 6 ? 128 : 32)) return false;
  list.addSubnet(address, bits, type);
  return true;
}

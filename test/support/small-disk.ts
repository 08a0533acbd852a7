import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, statfsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A filesystem of its own, small enough to fill: a tmpfs mounted for one test, resized while
 * mounted (the closest this machine has to a disk that fills up and is then given room). Needs
 * root, as CI has; `reason` says why not otherwise.
 */
export interface SmallDisk {
  dir: string;
  /** Bytes in use on it. */
  used(): number;
  /** Sets its size; shrinking below what is in use is refused by the kernel. */
  resize(bytes: number): void;
  remove(): void;
}

const MiB = 1024 * 1024;

export function mountSmallDisk(bytes: number, options: { owner?: string } = {}): SmallDisk {
  const dir = mkdtempSync(join(tmpdir(), 'tollwatch-disk-'));
  const owner = options.owner ? `,uid=${options.owner},gid=${options.owner},mode=0700` : '';
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${Math.ceil(bytes / 1024)}k${owner}`, 'tmpfs', dir]);
  return {
    dir,
    used() {
      const s = statfsSync(dir);
      return (s.blocks - s.bfree) * s.bsize;
    },
    resize(size: number) {
      execFileSync('mount', ['-o', `remount,size=${Math.ceil(size / 1024)}k`, dir]);
    },
    remove() {
      execFileSync('umount', ['-l', dir]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Why this process cannot mount a small disk, or undefined when it can. */
export function smallDiskUnavailable(): string | undefined {
  try {
    mountSmallDisk(MiB).remove();
    return undefined;
  } catch (err) {
    return `cannot mount a tmpfs here (${(err as Error).message.split('\n')[0]}); the disk-full tests need root`;
  }
}

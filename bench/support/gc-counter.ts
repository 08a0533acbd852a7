import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { constants, PerformanceObserver, type PerformanceEntry } from 'node:perf_hooks';

/**
 * Preloaded into a server by `alternated-cpu.ts --gc` (NODE_OPTIONS=--import=<this file>): counts
 * the process's garbage collections by kind, with their time, and writes the totals to
 * `gc-<pid>.json` in the temporary directory whenever the process gets SIGWINCH: a signal the
 * server ignores (SIGUSR2 would close it: close-with-grace listens for it).
 */
const totals = { minor: 0, minorMs: 0, major: 0, majorMs: 0, incremental: 0, incrementalMs: 0 };
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    const kind = (entry as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind;
    if (kind === constants.NODE_PERFORMANCE_GC_MINOR) (totals.minor += 1), (totals.minorMs += entry.duration);
    else if (kind === constants.NODE_PERFORMANCE_GC_MAJOR) (totals.major += 1), (totals.majorMs += entry.duration);
    else if (kind === constants.NODE_PERFORMANCE_GC_INCREMENTAL) (totals.incremental += 1), (totals.incrementalMs += entry.duration);
  }
}).observe({ entryTypes: ['gc'] });
process.on('SIGWINCH', () => writeFileSync(join(tmpdir(), `gc-${process.pid}.json`), JSON.stringify(totals)));

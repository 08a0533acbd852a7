import { writeSync } from 'node:fs';
import { afterAll, beforeAll, expect } from 'vitest';

/**
 * A setup file: says on standard error which signal ends a test worker in the middle of a file,
 * and in which file, then lets the signal do what it would have done. Vitest reports such a death
 * only as "Worker exited unexpectedly"; unfinished-files-reporter.ts names the file, this says
 * whether a signal did it (a crash of V8 or an addon leaves a report instead: vitest.config.ts).
 * Vitest itself ends each worker with SIGTERM once its file is done: that one is not reported.
 */
let running: string | undefined;
beforeAll(() => {
  running = expect.getState().testPath ?? 'a test file';
});
afterAll(() => {
  running = undefined;
});

for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP', 'SIGQUIT', 'SIGUSR2'] as const) {
  const onSignal = () => {
    if (running) writeSync(2, `\n[worker ${process.pid}] ${signal} received while running ${running} (${new Date().toISOString()}): something outside the test signalled this worker\n`);
    process.removeListener(signal, onSignal);
    process.kill(process.pid, signal);
  };
  process.on(signal, onSignal);
}

import pg from 'pg';
import { defineConfig } from 'vitest/config';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import UnfinishedFilesReporter from './test/support/unfinished-files-reporter.ts';
import { WASM_CODE_FLAGS } from './src/node-flags.ts';

/**
 * Every store-dependent test runs twice: on SQLite and on PostgreSQL (one test body,
 * a loop over dialects). Without a reachable PostgreSQL the second run is skipped and says so,
 * unless TOLLWATCH_REQUIRE_POSTGRES=1 (as in CI), where that is a failure.
 */
async function postgresReachable(url: string): Promise<string | undefined> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    await client.query('select 1');
    return undefined;
  } catch (err) {
    return (err as Error).message;
  } finally {
    await client.end().catch(() => {});
  }
}

export default defineConfig(async () => {
  const url = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const unreachable = await postgresReachable(url);
  if (unreachable) {
    const message = `PostgreSQL runs SKIPPED: cannot reach ${url} (${unreachable})`;
    if (process.env.TOLLWATCH_REQUIRE_POSTGRES === '1') throw new Error(`${message}; TOLLWATCH_REQUIRE_POSTGRES=1 makes that a failure`);
    console.warn(`\n*** ${message}. Only the SQLite runs will execute. ***\n`);
  }
  // PostgreSQL needs the key secret that seals its keys (docs/operations.md, "Keys"); SQLite
  // runs leave it unset, so they make and use the key file beside each store as a server does.
  const postgresEnv = { TEST_STORE: 'postgres', TEST_POSTGRES_URL: url, TOLLWATCH_KEY_SECRET: 'dG9sbHdhdGNoIHRlc3RzOiBub3QgYSByZWFsIGtleSE=' };
  // One directory per run, gone with it: vitest evaluates this file more than once, in the same process.
  if (!process.env.TOLLWATCH_TEST_CRASH_REPORTS) {
    const dir = mkdtempSync(join(tmpdir(), 'tollwatch-test-crashes-'));
    process.env.TOLLWATCH_TEST_CRASH_REPORTS = dir;
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  }
  const crashReports = process.env.TOLLWATCH_TEST_CRASH_REPORTS;
  const storeSuites = ['test/http/**/*.test.ts', 'test/cli/**/*.test.ts', 'test/sdk/**/*.test.ts', 'test/properties/**/*.test.ts', 'test/store/**/*.test.ts', 'test/dashboard/**/*.test.ts', 'test/durability/**/*.test.ts', 'test/alerts/**/*.test.ts', 'test/intelligence/**/*.test.ts', 'test/taxii/**/*.test.ts', 'test/dns/**/*.test.ts'];
  return {
    test: {
      // Integration tests open real stores and real sockets; two cores, so keep workers few.
      pool: 'forks',
      maxWorkers: 2,
      // A worker that dies takes its file's results with it, unnamed: the second reporter names
      // it, with the report Node writes if V8 or an addon ended the process (a signal is told
      // by test/support/worker-signals.ts).
      reporters: ['default', new UnfinishedFilesReporter(crashReports)],
      // WASM_CODE_FLAGS: the store's threads strip TypeScript with WebAssembly in the worker's
      // process, and V8 can abort it while freeing that code (src/node-flags.ts).
      execArgv: ['--report-on-fatalerror', `--report-directory=${crashReports}`, '--report-compact', ...WASM_CODE_FLAGS],
      setupFiles: ['test/support/worker-signals.ts', 'test/support/environment-restored.ts'],
      // Deadlines for a loaded two-core machine, where one spawned CLI can take seconds to start
      // (docs/testing.md, "Waiting"): a test that hangs still fails, one that is slow does not.
      testTimeout: 120_000,
      hookTimeout: 180_000,
      // expect.poll waits for a condition (test/support/eventually.ts does the same): 1 s by
      // default, which a loaded machine outlasts with nothing wrong.
      expect: { poll: { timeout: 20_000 } },
      projects: [
        { extends: true, test: { name: 'sqlite', include: ['test/**/*.test.ts'], exclude: ['test/faults/**', 'test/e2e/**'], env: { TEST_STORE: 'sqlite' } } },
        ...(unreachable ? [] : [{ extends: true, test: { name: 'postgres', include: storeSuites, env: postgresEnv } }]),
        // Takes the machine's PostgreSQL and Redis away: run on its own (npm test does, last).
        // Without a reachable PostgreSQL it has nothing to run, and says so rather than failing.
        // The dashboard in headless Chromium (`npm run test:e2e`), on SQLite: what it checks is the pages.
        // The browser walk-through is one long test: past 30 s on this machine with 4 KiB pages.
        { extends: true, test: { name: 'e2e', include: ['test/e2e/**/*.test.ts'], env: { TEST_STORE: 'sqlite' }, testTimeout: 180_000 } },
        // One file at a time: one stops the machine's PostgreSQL, another measures lookups under load.
        { extends: true, test: { name: 'outages', include: unreachable ? [] : ['test/faults/**/*.test.ts'], env: postgresEnv, fileParallelism: false } },
      ],
    },
  };
});

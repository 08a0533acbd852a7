import { Writable } from 'node:stream';
import { vi } from 'vitest';
import type { ApiEnvironment } from '../../src/cli/api-client.ts';
import { runCli } from '../../src/cli/main.ts';
import type { CommandRun } from './run-command.ts';

/**
 * Runs `tollwatch` in this process, through the `runCli` that bin/tollwatch.js calls, keeping what
 * it writes on its two streams: a spawned executable costs seconds on a loaded machine, for each run.
 * Operator commands open the store named by this process's DATABASE_URL; user commands read `env`
 * (this process's environment unless given).
 */
export async function runCliHere(args: string[], env?: ApiEnvironment): Promise<CommandRun> {
  const [out, err] = [kept(), kept()];
  const status = await runCli(args, { out: out.stream, err: err.stream, ...(env ? { env } : {}) });
  return { status, stdout: out.text(), stderr: err.text() };
}

/**
 * Sets this process's environment for in-process CLI runs (operator commands read it, as the
 * executable does) until the calling file's tests end, when test/support/environment-restored.ts
 * gives back what was there: a worker runs file after file, and a variable left behind would
 * configure the next one. Call it from a `beforeAll`, or from a test.
 */
export function cliEnvironment(variables: Record<string, string>): void {
  for (const [name, value] of Object.entries(variables)) vi.stubEnv(name, value);
}

/** A stream that keeps what is written to it, as a pipe to the test would. */
function kept() {
  let text = '';
  const stream = new Writable({
    write(chunk: Buffer | string, _encoding, done) {
      text += chunk.toString();
      done();
    },
  });
  return { stream, text: () => text };
}

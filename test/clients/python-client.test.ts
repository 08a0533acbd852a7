import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { normalisePhoneNumber } from '../../src/domain/phone-number.ts';
import { pythonSample } from '../support/number-forms.ts';
import { postEvent, sampleEvent, startHarness, type Harness, type TestAccount } from '../support/harness.ts';
import { runCommand, type CommandRun } from '../support/run-command.ts';

/**
 * The Python client (clients/python/) against a real server in this process: its
 * own unittest suite, with the server's address and two clients in the environment; its sdist and
 * wheel installed into a fresh venv, offline, and run from there; and its number key held to the
 * server's normaliser. Debian's /usr/bin/python3 runs it all. Skipped with a notice where it is
 * absent, unless CI is set, where that is a failure (.ci/run installs it).
 */
const PYTHON = '/usr/bin/python3';
const ROOT = new URL('../../', import.meta.url).pathname;
const present = existsSync(PYTHON);
if (!present) {
  const message = `Python client tests SKIPPED: ${PYTHON} is absent (apt-get install python3 python3-venv python3-pip python3-setuptools)`;
  if (process.env.CI) throw new Error(`${message}; CI makes that a failure`);
  console.warn(`\n*** ${message}. ***\n`);
}

const SEEN_NUMBER = '+46812118532';
const SEEN_IP = '203.0.113.7';

/**
 * Runs Python asynchronously (the server answering it runs in this process, which a synchronous
 * spawn would block), from the repository's root, with only the environment given: no
 * TOLLWATCH_* of the shell running the tests, no bytecode written into the checkout.
 */
function python(args: string[], env: Record<string, string> = {}, input = ''): Promise<CommandRun> {
  return runCommand(PYTHON, args, {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp', TMPDIR: process.env.TMPDIR ?? '/tmp', LANG: 'C.UTF-8', PYTHONDONTWRITEBYTECODE: '1', ...env },
    input,
    timeoutMs: 540_000,
  });
}

/** What unittest printed, for the assertion's message: it says which test failed and why. */
function report(run: CommandRun): string {
  return `exit ${run.status}\n--- stdout\n${run.stdout}\n--- stderr\n${run.stderr}`;
}

describe.skipIf(!present)('the Python client (clients/python)', () => {
  let h: Harness;
  let owner: TestAccount;
  let env: Record<string, string>;

  beforeAll(async () => {
    h = await startHarness();
    owner = await h.account();
    // Two more clients of the owner's account, for Python: one with every data permission, one
    // with read:ip-addresses alone. The events below come from the owner's own client.
    const accountId = owner.account.account_id;
    const full = await h.services.accounts.createClient({ accountId, name: 'python' });
    const limited = await h.services.accounts.createClient({ accountId, name: 'python, addresses only', permissions: ['read:ip-addresses'] });
    const seen = sampleEvent({ called_number: '0046812118532', source_ip: SEEN_IP });
    expect((await postEvent(owner, seen)).status).toBe(201);
    expect((await postEvent(owner, sampleEvent({ called_number: SEEN_NUMBER, source_ip: '203.0.113.8', sip_method: 'OPTIONS' }))).status).toBe(201);
    // Folded into the aggregates, so that the feeds hold them (docs/api.md §14).
    await h.settled();
    env = {
      TOLLWATCH_TEST_REQUIRED: '1',
      TOLLWATCH_TEST_URL: h.url,
      TOLLWATCH_TEST_CLIENT_ID: full.client_id,
      TOLLWATCH_TEST_CLIENT_SECRET: full.client_secret,
      TOLLWATCH_TEST_LIMITED_CLIENT_ID: limited.client_id,
      TOLLWATCH_TEST_LIMITED_CLIENT_SECRET: limited.client_secret,
      TOLLWATCH_TEST_SEEN_NUMBER: SEEN_NUMBER,
      TOLLWATCH_TEST_SEEN_IP: SEEN_IP,
      TOLLWATCH_TEST_EVENT_UUID: String(seen.event_uuid),
    };
  });
  afterAll(async () => {
    await h?.close();
  });

  it('passes its unit and integration tests against this server', { timeout: 600_000 }, async () => {
    const run = await python(['-m', 'unittest', 'discover', '-s', 'clients/python/tests', '-v'], env);
    expect(run.status, report(run)).toBe(0);
    // Every test ran: none skipped for want of a server, the real-server ones among them.
    expect(run.stderr, report(run)).toMatch(/\nOK\n$/);
    for (const name of ['test_a_seen_number_in_any_written_form', 'test_many_events_go_in_batches_each_stored_or_refused_on_its_own', 'test_a_seen_number_exits_0_with_readable_lines', 'test_a_server_that_accepts_and_never_answers_fails_the_call_at_its_deadline']) {
      expect(run.stderr, report(run)).toMatch(new RegExp(`^${name} \\(.*\\) \\.\\.\\. ok$`, 'm'));
    }
  });

  it('installs from its sdist and wheel into a fresh venv offline, and looks up from there', { timeout: 600_000 }, async () => {
    const run = await python(['-m', 'unittest', 'discover', '-s', 'clients/python/tests', '-p', 'install_check.py', '-v'], env);
    expect(run.status, report(run)).toBe(0);
    expect(run.stderr, report(run)).toMatch(/^Ran 3 tests .*\n\nOK\n$/m);
  });

  it('works out the same number key as the server on generated numbers (docs/api.md §13)', async () => {
    const inputs = pythonSample();
    const script = 'import json, sys; from tollwatch import phone_number_key; print(json.dumps([phone_number_key(v) for v in json.load(sys.stdin)]))';
    const run = await python(['-c', script], { PYTHONPATH: 'clients/python/src' }, JSON.stringify(inputs));
    expect(run.status, report(run)).toBe(0);
    const keys = JSON.parse(run.stdout) as Array<string | null>;
    const differ = inputs.flatMap((input, i) => {
      const expected = normalisePhoneNumber(input)?.key ?? null;
      return keys[i] === expected ? [] : [{ input, python: keys[i], server: expected }];
    });
    expect(differ).toEqual([]);
    expect(keys).toHaveLength(inputs.length);
    // Not a vacuous agreement: many generated values are numbers, many are not.
    expect(keys.filter((k) => k !== null).length).toBeGreaterThan(1000);
    expect(keys.filter((k) => k === null).length).toBeGreaterThan(1000);
  });
});

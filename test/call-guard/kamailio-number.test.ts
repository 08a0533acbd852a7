import { spawn } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GUARD_DEFAULTS, renderGuardConfig } from '../../src/cli/kamailio-guard-config.ts';
import { normalisePhoneNumber } from '../../src/domain/phone-number.ts';
import { callPathMissing, freeUdpPort, scratchDir } from '../support/call-path.ts';
import { eventually } from '../support/eventually.ts';
import { pythonSample, sdkNumberForms } from '../support/number-forms.ts';

/**
 * The guard's reading of a called number (route[TOLLWATCH_NUMBER] of integrations/kamailio/
 * tollwatch-guard.cfg), run by the real Kamailio on the values the SDK's and the Python client's
 * number keys are held to the server's with, each sent as an INVITE's Request-URI user. Kamailio
 * answers each with what the route made of it: the number it would ask Tollwatch about, and the
 * key it looks up in its mirror. Skipped where Kamailio is missing, unless
 * TOLLWATCH_REQUIRE_CALL_PATH=1 (CI), where that fails.
 */
const missing = callPathMissing();
if (process.env.TOLLWATCH_REQUIRE_CALL_PATH === '1' && missing) {
  it('has Kamailio to test the guard’s number reading with', () => expect(missing).toBeUndefined());
}

/** A Request-URI user as a caller writes it: UTF-8, every byte that is not plainly safe escaped. */
function asUser(value: string): string {
  return [...Buffer.from(value, 'utf8')].map((byte) => (/[A-Za-z0-9+\-_.!~*'()]/.test(String.fromCharCode(byte)) ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`)).join('');
}

/** What the guard made of a user: the value it asks about (percent-encoded, "" for none) and its mirror key ("" for none). */
interface Reading {
  asked: string;
  key: string;
}

describe.skipIf(missing !== undefined)('the Kamailio guard reads numbers as the server does', () => {
  const dir = scratchDir('guard-number');
  let port = 0;
  let stop = async () => {};

  beforeAll(async () => {
    const guard = renderGuardConfig({ ...GUARD_DEFAULTS, url: 'http://127.0.0.1:9', clientId: 'twc_x', clientSecret: 'tws_x' });
    const route = /^route\[TOLLWATCH_NUMBER\] \{$[\s\S]*?^\}$/m.exec(guard)?.[0];
    expect(route, 'the guard has route[TOLLWATCH_NUMBER]').toBeDefined();
    port = await freeUdpPort();
    writeFileSync(
      join(dir.path, 'number.cfg'),
      [
        '#!KAMAILIO',
        'debug=1',
        'log_stderror=yes',
        `listen=udp:127.0.0.1:${port}`,
        'children=2',
        'loadmodule "pv.so"',
        'loadmodule "sl.so"',
        'loadmodule "textops.so"',
        'loadmodule "xlog.so"',
        'request_route {',
        '\troute(TOLLWATCH_NUMBER);',
        '\tappend_to_reply("X-Asked: $var(tw_enc)\\r\\nX-Key: $var(tw_key)\\r\\n");',
        '\tsl_send_reply("404", "Read");',
        '}',
        route!,
        '',
      ].join('\n'),
    );
    const child = spawn('kamailio', ['-f', join(dir.path, 'number.cfg'), '-m', '64', '-DD', '-E', '-Y', dir.path], { stdio: ['ignore', 'ignore', 'pipe'], detached: true });
    let log = '';
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (log = (log + chunk).slice(-4000)));
    const reap = () => child.kill('SIGKILL');
    process.once('exit', reap);
    stop = async () => {
      process.removeListener('exit', reap);
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        await exited;
      }
    };
    await eventually(`Kamailio to read a number (its log: ${log})`, () => read(['100'], 500).then((r) => r[0]?.key, () => undefined), (key) => key === '100', { timeoutMs: 30_000, everyMs: 200 });
  });
  afterAll(async () => {
    await stop();
    dir?.remove();
  });

  /** Sends each value as an INVITE's user, a window of 50 at a time, and collects the readings by Call-ID. */
  async function read(values: readonly string[], patienceMs = 5_000): Promise<Reading[]> {
    const socket = createSocket('udp4');
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
    const local = socket.address().port;
    const readings: Reading[] = new Array(values.length);
    const waiting = new Map<string, () => void>();
    socket.on('message', (message) => {
      const text = message.toString('latin1');
      const callId = /^Call-ID: (\S+)\r$/m.exec(text)?.[1];
      const asked = /^X-Asked: (.*)\r$/m.exec(text)?.[1];
      const key = /^X-Key: (.*)\r$/m.exec(text)?.[1];
      if (callId === undefined || asked === undefined || key === undefined) return;
      const index = Number(callId.split('-')[1]);
      readings[index] = { asked, key };
      waiting.get(callId)?.();
    });
    const ask = (index: number) =>
      new Promise<void>((resolve, reject) => {
        const callId = `n-${index}-${local}`;
        const user = asUser(values[index]!);
        const invite = [
          `INVITE sip:${user}@127.0.0.1:${port} SIP/2.0`,
          `Via: SIP/2.0/UDP 127.0.0.1:${local};branch=z9hG4bK-${index}-${local}`,
          'Max-Forwards: 70',
          `From: <sip:caller@127.0.0.1>;tag=${index}`,
          `To: <sip:${user}@127.0.0.1>`,
          `Call-ID: ${callId}`,
          'CSeq: 1 INVITE',
          'Content-Length: 0',
          '',
          '',
        ].join('\r\n');
        const timer = setTimeout(() => reject(new Error(`no answer to ${JSON.stringify(values[index])} sent as ${user}`)), patienceMs);
        waiting.set(callId, () => {
          clearTimeout(timer);
          waiting.delete(callId);
          resolve();
        });
        socket.send(invite, port, '127.0.0.1');
      });
    try {
      for (let start = 0; start < values.length; start += 50) {
        await Promise.all(Array.from({ length: Math.min(50, values.length - start) }, (_, i) => ask(start + i)));
      }
    } finally {
      socket.close();
    }
    return readings;
  }

  /** Where the guard's reading of `value` departs from the server's; undefined where it agrees. */
  function disagreement(value: string, reading: Reading): Record<string, unknown> | undefined {
    const server = normalisePhoneNumber(value)?.key ?? null;
    // What Tollwatch makes of the question the guard asks: the same number, or (none asked) no number.
    const answered = reading.asked === '' ? null : (normalisePhoneNumber(Buffer.from(decodeURIComponent(reading.asked), 'utf8').toString())?.key ?? null);
    const asksRight = reading.asked === '' ? server === null : answered === server;
    // The mirror's key: none, or the server's.
    const keysRight = reading.key === '' || reading.key === server;
    return asksRight && keysRight ? undefined : { value, server, asked: reading.asked, answered, key: reading.key };
  }

  it('asks Tollwatch about the same number the server reads, and keys its mirror alike, on the SDK’s and the Python client’s generated values', async () => {
    const values = [...fc.sample(sdkNumberForms, { numRuns: 2000, seed: 51 }), ...pythonSample(49)].filter((v) => Buffer.from(v, 'utf8').toString() === v);
    const readings = await read(values);
    const differ = values.flatMap((value, i) => disagreement(value, readings[i]!) ?? []);
    expect(differ).toEqual([]);
    // Every number written in printable ASCII gets its key, so that mirror mode holds it; one
    // with other characters (white space Tollwatch trims, a non-breaking space) is looked up.
    const unkeyed = values.filter((v, i) => /^[\x20-\x7e]*$/.test(v) && normalisePhoneNumber(v) !== null && readings[i]!.key === '');
    expect(unkeyed).toEqual([]);
    // Not vacuous: many values are numbers, many are not.
    expect(values.filter((v, i) => readings[i]!.key !== '').length).toBeGreaterThan(1500);
    expect(values.filter((v) => normalisePhoneNumber(v) === null).length).toBeGreaterThan(1000);
  });
});

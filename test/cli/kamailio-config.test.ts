import { spawnSync } from 'node:child_process';
import { copyFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { GUARD_DEFAULTS, renderGuardConfig, type GuardSettings } from '../../src/cli/kamailio-guard-config.ts';
import { DEFAULT_THROTTLE } from '../../src/limits/failure-throttle.ts';
import { callPathMissing, scratchDir } from '../support/call-path.ts';
import { runCliHere } from '../support/in-process-cli.ts';

/** `tollwatch kamailio-config` (docs/cli.md, docs/call-guard.md): the guard with an operator's settings. */
const settings: GuardSettings = { ...GUARD_DEFAULTS, url: 'https://tollwatch.example.com/', clientId: 'twc_abc-DEF_1', clientSecret: 'tws_secret-XYZ_9' };

const cli = (args: string[], env: Record<string, string> = {}) => runCliHere(args, env);

const setting = (text: string, name: string) => new RegExp(`^#!substdef "!${name}!([^!]*)!"$`, 'm').exec(text)?.[1];
const defined = (text: string, name: string) => new RegExp(`^#!define ${name}$`, 'm').test(text);

describe('the guard rendered with settings', () => {
  it('writes every setting into its substdef line and every switch as a define, leaving the rest of the template as it is', () => {
    const text = renderGuardConfig({ ...settings, threshold: 70, refuseCode: 603, budgetMs: 150, failClosed: true, failCode: 500, checkSource: false, mirror: true, mirrorIntervalSeconds: 30, mirrorPassesMisses: true, pollMicros: 1000 });
    expect(setting(text, 'TW_URL')).toBe('https://tollwatch.example.com');
    expect(setting(text, 'TW_CLIENT_ID')).toBe('twc_abc-DEF_1');
    expect(setting(text, 'TW_CLIENT_SECRET')).toBe('tws_secret-XYZ_9');
    expect([setting(text, 'TW_THRESHOLD'), setting(text, 'TW_REFUSE_CODE'), setting(text, 'TW_REFUSE_TEXT')]).toEqual(['70', '603', 'Decline']);
    expect([setting(text, 'TW_BUDGET_MS'), setting(text, 'TW_FAIL_CODE'), setting(text, 'TW_FAIL_TEXT')]).toEqual(['150', '500', 'Server Internal Error']);
    expect([setting(text, 'TW_MIRROR_INTERVAL'), setting(text, 'TW_POLL_US')]).toEqual(['30', '1000']);
    expect(['TW_FAIL_CLOSED', 'TW_SKIP_SOURCE', 'TW_MIRROR', 'TW_MIRROR_PASS_MISSES'].map((name) => defined(text, name))).toEqual([true, true, true, true]);
    const strip = (t: string) => t.replace(/^#!substdef .*$/gm, '').replace(/^#?#!define TW_.*$/gm, '');
    expect(strip(text)).toBe(strip(renderGuardConfig(settings)));
  });

  it('leaves the switches off by default: fail open, sources checked, per call', () => {
    const text = renderGuardConfig(settings);
    expect(['TW_FAIL_CLOSED', 'TW_SKIP_SOURCE', 'TW_MIRROR', 'TW_MIRROR_PASS_MISSES'].map((name) => defined(text, name))).toEqual([false, false, false, false]);
    // Misses pass only in mirror mode.
    expect(defined(renderGuardConfig({ ...settings, mirrorPassesMisses: true }), 'TW_MIRROR_PASS_MISSES')).toBe(false);
  });

  it('leaves ranges out by default, and refuses an unseen number of a hot range only with a range threshold', async () => {
    const off = renderGuardConfig(settings);
    expect(defined(off, 'TW_RANGE')).toBe(false);
    const on = renderGuardConfig({ ...settings, rangeThreshold: 40 });
    expect(defined(on, 'TW_RANGE')).toBe(true);
    expect(setting(on, 'TW_RANGE_THRESHOLD')).toBe('40');
    // The range is read from a number's 404 only, and raises the decision there.
    expect(on).toMatch(/if \(\$var\(tw_status\) == 404\) \{\n#!ifdef TW_RANGE\n\t\troute\(TOLLWATCH_RANGE\);/);
    expect(on).toContain('jansson_get("range.score", "$var(tw_body)", "$var(tw_range_score)")');
    for (const rangeThreshold of [-1, 101, 2.5]) expect(() => renderGuardConfig({ ...settings, rangeThreshold }), String(rangeThreshold)).toThrow(/range threshold must be a whole number from 0 to 100/);
    const env = { TOLLWATCH_URL: 'http://x', TOLLWATCH_CLIENT_ID: 'twc_a', TOLLWATCH_CLIENT_SECRET: 'tws_a' };
    const run = await cli(['kamailio-config', '--range-threshold', '55'], env);
    expect(run.status).toBe(0);
    expect([defined(run.stdout, 'TW_RANGE'), setting(run.stdout, 'TW_RANGE_THRESHOLD')]).toEqual([true, '55']);
    expect(defined((await cli(['kamailio-config'], env)).stdout, 'TW_RANGE')).toBe(false);
    expect(await cli(['kamailio-config', '--range-threshold', '101'], env)).toMatchObject({ status: 1, stderr: 'tollwatch: the range threshold must be a whole number from 0 to 100\n' });
    expect((await cli(['kamailio-config', '--range-threshold', 'hot'], env)).status).toBe(2);
    expect(await cli(['kamailio-config', '--mode', 'dns', '--range-threshold', '50'], env)).toMatchObject({ status: 1, stderr: expect.stringContaining('--range-threshold needs the lookups') });
  });

  it('decides a 429 as told: through, refused, or by the mirror alone (mirror mode only); by default as it fails', async () => {
    const switches = (text: string) => ['TW_QUOTA_CLOSED', 'TW_QUOTA_MIRROR'].map((name) => defined(text, name));
    expect(switches(renderGuardConfig(settings))).toEqual([false, false]);
    expect(switches(renderGuardConfig({ ...settings, quota: 'closed' }))).toEqual([true, false]);
    expect(switches(renderGuardConfig({ ...settings, mirror: true, quota: 'mirror' }))).toEqual([false, true]);
    expect(() => renderGuardConfig({ ...settings, quota: 'mirror' })).toThrow(/--quota mirror needs mirror mode/);
    const env = { TOLLWATCH_URL: 'http://x', TOLLWATCH_CLIENT_ID: 'twc_a', TOLLWATCH_CLIENT_SECRET: 'tws_a' };
    expect(switches((await cli(['kamailio-config', '--fail', 'closed'], env)).stdout)).toEqual([true, false]);
    expect(switches((await cli(['kamailio-config', '--fail', 'closed', '--quota', 'open'], env)).stdout)).toEqual([false, false]);
    expect(switches((await cli(['kamailio-config'], env)).stdout)).toEqual([false, false]);
  });

  it('waits for an answer longer than the failed-authentication throttle ever holds one, so a refusal is never taken for a timeout', () => {
    const seconds = Number(/^modparam\("http_client", "connection_timeout", (\d+)\)$/m.exec(renderGuardConfig(settings))?.[1]);
    expect(seconds * 1000).toBeGreaterThan(DEFAULT_THROTTLE.maxDelayMs);
  });

  it('refuses what Kamailio would read as syntax, or what Tollwatch never issues', () => {
    for (const url of ['ftp://x', 'not a url', 'http://x/$var(a)', 'http://x/a!b', 'http://x/?q=1', 'http://x/?', 'http://x/#', 'http://x?', 'http://x/a#b', 'http://u:p@x/']) {
      expect(() => renderGuardConfig({ ...settings, url }), url).toThrow(/URL/);
    }
    for (const clientSecret of ['', 'tws_"quoted', 'tws_$x', 'a!b', 'tws_ space', 'x'.repeat(201)]) {
      expect(() => renderGuardConfig({ ...settings, clientSecret }), clientSecret).toThrow(/client secret/);
    }
    expect(() => renderGuardConfig({ ...settings, threshold: 101 })).toThrow(/threshold/);
    expect(() => renderGuardConfig({ ...settings, budgetMs: 5 })).toThrow(/budget/);
    expect(() => renderGuardConfig({ ...settings, failCode: 403 })).toThrow(/fail code/);
    expect(() => renderGuardConfig({ ...settings, refuseCode: 404 as 403 })).toThrow(/403 or 603/);
  });

  it('is a configuration Kamailio accepts, in every mode', { skip: callPathMissing() !== undefined }, () => {
    const dir = scratchDir('guard-check');
    try {
      copyFileSync(new URL('../../integrations/kamailio/kamailio.cfg', import.meta.url), join(dir.path, 'kamailio.cfg'));
      for (const variant of [settings, { ...settings, mirror: true, mirrorPassesMisses: true, failClosed: true, checkSource: false }, { ...settings, rangeThreshold: 60 }]) {
        writeFileSync(join(dir.path, 'tollwatch-guard.cfg'), renderGuardConfig(variant));
        const check = spawnSync('kamailio', ['-c', '-f', join(dir.path, 'kamailio.cfg')], { encoding: 'utf8' });
        expect(check.status, check.stderr.split('\n').filter((l) => /ERROR|CRITICAL/.test(l)).join('\n')).toBe(0);
        expect(check.stderr).toContain('config file ok');
      }
    } finally {
      dir.remove();
    }
  });
});

describe('tollwatch kamailio-config', () => {
  it('prints the guard with the URL and client from the environment, the secret never from an argument', async () => {
    const run = await cli(['kamailio-config', '--threshold', '65', '--mode', 'mirror', '--mirror-misses', 'pass'], { TOLLWATCH_URL: 'http://10.0.0.5:8080', TOLLWATCH_CLIENT_ID: 'twc_env', TOLLWATCH_CLIENT_SECRET: 'tws_env' });
    expect(run).toMatchObject({ status: 0, stderr: '' });
    expect([setting(run.stdout, 'TW_URL'), setting(run.stdout, 'TW_CLIENT_ID'), setting(run.stdout, 'TW_CLIENT_SECRET'), setting(run.stdout, 'TW_THRESHOLD')]).toEqual(['http://10.0.0.5:8080', 'twc_env', 'tws_env', '65']);
    expect(defined(run.stdout, 'TW_MIRROR') && defined(run.stdout, 'TW_MIRROR_PASS_MISSES')).toBe(true);
    expect(run.stdout.startsWith('#\n# Tollwatch call guard')).toBe(true);
    expect((await cli(['kamailio-config', '--client-secret', 'tws_x'], { TOLLWATCH_URL: 'http://x', TOLLWATCH_CLIENT_ID: 'twc_x' })).status).toBe(2);
  });

  it('--json gives the file and the settings, without the secret', async () => {
    const run = await cli(['--json', 'kamailio-config', '--url', 'http://x:1/', '--client-id', 'twc_a', '--fail', 'closed'], { TOLLWATCH_CLIENT_SECRET: 'tws_hidden' });
    expect(run.status).toBe(0);
    const answer = JSON.parse(run.stdout) as { config: string; settings: Record<string, unknown> };
    expect(answer.settings).toMatchObject({ url: 'http://x:1/', clientId: 'twc_a', failClosed: true, threshold: 50 });
    expect(JSON.stringify(answer.settings)).not.toContain('tws_hidden');
    expect(setting(answer.config, 'TW_CLIENT_SECRET')).toBe('tws_hidden');
  });

  it('says what is missing or wrong, with a usage status for a malformed option', async () => {
    expect(await cli(['kamailio-config', '--client-id', 'twc_a'], { TOLLWATCH_CLIENT_SECRET: 'tws_a' })).toMatchObject({ status: 1, stderr: 'tollwatch: no Tollwatch URL: give --url or set TOLLWATCH_URL\n' });
    expect(await cli(['kamailio-config', '--url', 'http://x', '--client-id', 'twc_a'])).toMatchObject({ status: 1, stderr: 'tollwatch: no client secret: set TOLLWATCH_CLIENT_SECRET\n' });
    expect(await cli(['kamailio-config', '--url', 'http://x', '--client-id', 'twc_a', '--threshold', '101'], { TOLLWATCH_CLIENT_SECRET: 'tws_a' })).toMatchObject({ status: 1, stderr: 'tollwatch: the threshold must be a whole number from 0 to 100\n' });
    expect((await cli(['kamailio-config', '--threshold', 'high'])).status).toBe(2);
    expect((await cli(['kamailio-config', '--refuse', '404'])).status).toBe(2);
    expect((await cli(['kamailio-config', '--mode', 'sometimes'])).status).toBe(2);
  });
});

import { describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../src/config.ts';

const load = (env: Record<string, string>) => loadConfig(env, false);

describe('the environment read', () => {
  it('is the one given, not the process’s beneath it', () => {
    vi.stubEnv('TOLLWATCH_SMTP_URL', 'smtp://127.0.0.1:2525');
    try {
      expect(load({}).alerts.smtpUrl).toBeUndefined();
      expect(() => load({ TOLLWATCH_SIGN_UP: 'open' })).toThrow(/needs TOLLWATCH_SMTP_URL/);
      // The process's environment is read when it is the one given (the default).
      expect(loadConfig(process.env, false).alerts.smtpUrl).toBe('smtp://127.0.0.1:2525');
    } finally {
      vi.unstubAllEnvs();
    }
  });
});

describe('TOLLWATCH_TRUST_PROXY', () => {
  it('is off unless set: the socket address is the client address', () => {
    expect(load({}).trustProxy).toBeUndefined();
    expect(load({ TOLLWATCH_TRUST_PROXY: '' }).trustProxy).toBeUndefined();
    expect(load({ TOLLWATCH_TRUST_PROXY: 'false' }).trustProxy).toBeUndefined();
  });

  it('takes true, or a comma-separated list of addresses, CIDR ranges and range names', () => {
    expect(load({ TOLLWATCH_TRUST_PROXY: 'true' }).trustProxy).toBe(true);
    expect(load({ TOLLWATCH_TRUST_PROXY: ' 10.0.0.0/8, 192.0.2.7 ,2001:db8::/32,loopback,172.16.0.0/255.240.0.0' }).trustProxy).toEqual([
      '10.0.0.0/8',
      '192.0.2.7',
      '2001:db8::/32',
      'loopback',
      '172.16.0.0/255.240.0.0',
    ]);
  });

  it('refuses what it cannot honour, naming the variable', () => {
    for (const bad of ['proxy.internal', '10.0.0.0/33', '2001:db8::/129', '10.0.0.1/x', 'True']) {
      expect(() => load({ TOLLWATCH_TRUST_PROXY: bad }), bad).toThrow(/TOLLWATCH_TRUST_PROXY/);
    }
    // Fastify 5 ignores a hop count; taking it silently would leave the operator misled.
    expect(() => load({ TOLLWATCH_TRUST_PROXY: '2' })).toThrow(/hop count/);
  });
});

describe('TOLLWATCH_METRICS and TOLLWATCH_METRICS_TOKEN', () => {
  it('serves metrics unless switched off, open unless a token is set', () => {
    expect(load({})).toMatchObject({ metrics: true, metricsToken: undefined });
    expect(load({ TOLLWATCH_METRICS: 'off' }).metrics).toBe(false);
    expect(load({ TOLLWATCH_METRICS_TOKEN: '' }).metricsToken).toBeUndefined();
    expect(load({ TOLLWATCH_METRICS_TOKEN: 'a'.repeat(16) }).metricsToken).toBe('a'.repeat(16));
  });

  it('refuses a token short enough to guess, or one a header cannot carry', () => {
    for (const bad of ['short', 'a'.repeat(15), `${'a'.repeat(16)} b`]) {
      expect(() => load({ TOLLWATCH_METRICS_TOKEN: bad }), bad).toThrow(/TOLLWATCH_METRICS_TOKEN/);
    }
    expect(() => load({ TOLLWATCH_METRICS: 'yes' })).toThrow();
  });
});

describe('TOLLWATCH_KEY_SECRET', () => {
  it('takes 32 bytes in base64, base64url or hex; empty means unset', () => {
    const bytes = Buffer.from('tollwatch tests: not a real key!');
    for (const text of [bytes.toString('base64'), bytes.toString('base64url'), bytes.toString('hex'), ` ${bytes.toString('base64')}\n`]) {
      expect(Buffer.from(load({ TOLLWATCH_KEY_SECRET: text }).keySecret!)).toEqual(bytes);
    }
    expect(load({ TOLLWATCH_KEY_SECRET: '' }).keySecret).toBeUndefined();
    expect(load({}).keySecret).toBeUndefined();
  });

  it('refuses anything that is not a 32-byte key, naming the variable but never repeating the value', () => {
    for (const bad of ['hunter2', Buffer.alloc(16).toString('base64'), Buffer.alloc(33).toString('base64'), 'a'.repeat(63), `${'x'.repeat(43)}!`]) {
      let message = '';
      try {
        load({ TOLLWATCH_KEY_SECRET: bad });
      } catch (err) {
        message = (err as Error).message;
      }
      expect(message, bad).toMatch(/^TOLLWATCH_KEY_SECRET: must be 32 random bytes in base64 or hex/);
      expect(message, bad).not.toContain(bad);
    }
  });
});

describe('audit retention', () => {
  it('keeps 90 days and 100,000 failure rows unless told, and refuses nonsense', () => {
    expect(load({}).auditRetention).toEqual({ days: 90, maxFailureRows: 100_000 });
    expect(load({ TOLLWATCH_AUDIT_RETENTION_DAYS: '7', TOLLWATCH_AUDIT_MAX_FAILURE_ROWS: '5000' }).auditRetention).toEqual({ days: 7, maxFailureRows: 5000 });
    const bad: Array<Record<string, string>> = [{ TOLLWATCH_AUDIT_RETENTION_DAYS: '0' }, { TOLLWATCH_AUDIT_MAX_FAILURE_ROWS: '0' }, { TOLLWATCH_AUDIT_RETENTION_DAYS: 'forever' }];
    for (const env of bad) {
      expect(() => load(env), JSON.stringify(env)).toThrow(/TOLLWATCH_AUDIT_/);
    }
  });
});

describe('connection limits', () => {
  it('holds 4,096 connections and 256 per address unless told, and refuses nonsense', () => {
    expect(load({})).toMatchObject({ maxConnections: 4096, maxConnectionsPerAddress: 256 });
    expect(load({ TOLLWATCH_MAX_CONNECTIONS: '64', TOLLWATCH_MAX_CONNECTIONS_PER_ADDRESS: '16' })).toMatchObject({ maxConnections: 64, maxConnectionsPerAddress: 16 });
    for (const env of [{ TOLLWATCH_MAX_CONNECTIONS_PER_ADDRESS: '0' }, { TOLLWATCH_MAX_CONNECTIONS_PER_ADDRESS: 'many' }]) {
      expect(() => load(env), JSON.stringify(env)).toThrow(/TOLLWATCH_MAX_CONNECTIONS_PER_ADDRESS/);
    }
  });
});

describe('the dashboard’s settings (docs/dashboard.md, "Configuration")', () => {
  it('defaults to sign-up by invitation only on the tester plan, manual contributor approval, 30-minute idle and 12-hour sessions, and an hour before a node is silent', () => {
    expect(load({}).dashboard).toEqual({ signup: false, signUpPlan: 'tester', contributorApproval: 'manual', sessionIdleSeconds: 1800, sessionMaxSeconds: 43_200, nodeSilentAfterSeconds: 3600, secureCookies: false });
  });

  it('reads each variable, and makes cookies Secure for an https public URL', () => {
    const config = load({
      TOLLWATCH_SIGN_UP: 'open',
      TOLLWATCH_SMTP_URL: 'smtp://127.0.0.1:2525',
      TOLLWATCH_SIGN_UP_PLAN: 'business',
      TOLLWATCH_CONTRIBUTOR_APPROVAL: 'automatic',
      TOLLWATCH_SESSION_IDLE: '600',
      TOLLWATCH_SESSION_MAX: '7200',
      TOLLWATCH_NODE_SILENT_AFTER: '900',
      TOLLWATCH_PUBLIC_URL: 'https://tw.example.com/',
    });
    expect(config.dashboard).toEqual({ signup: true, signUpPlan: 'business', contributorApproval: 'automatic', sessionIdleSeconds: 600, sessionMaxSeconds: 7200, nodeSilentAfterSeconds: 900, secureCookies: true });
  });

  it('refuses open sign-up without mail, since its links are mailed', () => {
    expect(() => load({ TOLLWATCH_SIGN_UP: 'open' })).toThrow(/TOLLWATCH_SIGN_UP=open needs TOLLWATCH_SMTP_URL/);
    expect(load({ TOLLWATCH_SIGN_UP: 'invitation' }).dashboard.signup).toBe(false);
  });

  it('refuses values it cannot use', () => {
    expect(() => load({ TOLLWATCH_SIGN_UP: 'on' })).toThrow(/TOLLWATCH_SIGN_UP/);
    expect(() => load({ TOLLWATCH_CONTRIBUTOR_APPROVAL: 'yes' })).toThrow(/TOLLWATCH_CONTRIBUTOR_APPROVAL/);
    expect(() => load({ TOLLWATCH_SESSION_IDLE: '0' })).toThrow();
  });
});

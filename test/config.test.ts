import { describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';

const load = (env: Record<string, string>) => loadConfig(env, false);

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

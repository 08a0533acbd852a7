import { get } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PrometheusMetrics } from '../../src/metrics/prometheus-metrics.ts';
import { postEvent, sampleEvent, startHarness, type Harness, type TestAccount } from '../support/harness.ts';
import { privateRedis, redisServerMissing, type PrivateRedis } from '../support/redis.ts';
import { startServerProcess, type ServerProcess } from '../support/server-process.ts';
import { freshDatabase, type TestDatabase } from '../support/test-database.ts';

/** One sample line of the text exposition. */
interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const SAMPLE_LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{((?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*",?)*)\})? (\S+)$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"/g;

/**
 * Reads the Prometheus text format (version 0.0.4) strictly: every family declared by one
 * `# HELP` and one `# TYPE` line before its samples, every sample of a declared family (a
 * histogram's as `_bucket`, `_sum` and `_count`), every value a number.
 */
function parseExposition(text: string): { types: Map<string, string>; samples: Sample[] } {
  const types = new Map<string, string>();
  const helped = new Set<string>();
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const comment = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(line);
    if (comment) {
      const [, kind, name, rest] = comment;
      expect(name, line).toMatch(METRIC_NAME);
      if (kind === 'HELP') helped.add(name!);
      else {
        expect(['counter', 'gauge', 'histogram', 'summary', 'untyped'], line).toContain(rest);
        expect(types.has(name!), `${name} typed twice`).toBe(false);
        types.set(name!, rest!);
      }
      continue;
    }
    const match = SAMPLE_LINE.exec(line);
    expect(match, `not a sample line: ${line}`).not.toBeNull();
    const [, name, labelText, valueText] = match!;
    const family = types.has(name!) ? name! : name!.replace(/_(bucket|sum|count)$/, '');
    expect(types.get(family), `sample of an undeclared family: ${line}`).toBeDefined();
    if (family !== name) expect(['histogram', 'summary']).toContain(types.get(family));
    expect(helped.has(family), `no HELP for ${family}`).toBe(true);
    const value = valueText === '+Inf' ? Infinity : valueText === '-Inf' ? -Infinity : Number(valueText);
    expect(Number.isNaN(value) && valueText !== 'NaN' && valueText !== 'Nan', line).toBe(false);
    const labels: Record<string, string> = {};
    for (const [, key, raw] of (labelText ?? '').matchAll(LABEL)) labels[key!] = raw!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    samples.push({ name: name!, labels, value });
  }
  return { types, samples };
}

/** A scrape's samples, read with the labels a test names (all of them, exactly). */
class Scrape {
  readonly types: Map<string, string>;
  readonly samples: Sample[];

  constructor(text: string) {
    ({ types: this.types, samples: this.samples } = parseExposition(text));
  }

  /** The value of one series; 0 when it is not exposed (a counter that never moved). */
  value(name: string, labels: Record<string, string> = {}): number {
    const keys = Object.keys(labels);
    const found = this.samples.find(
      (s) => s.name === name && Object.keys(s.labels).length === keys.length && keys.every((k) => s.labels[k] === labels[k]),
    );
    return found?.value ?? 0;
  }

  /** Every label set of a metric's samples. */
  series(name: string): Array<Record<string, string>> {
    return this.samples.filter((s) => s.name === name).map((s) => s.labels);
  }
}

async function scrape(url: string, headers: Record<string, string> = {}): Promise<Scrape> {
  const res = await fetch(`${url}/metrics`, { headers });
  expect(res.status).toBe(200);
  return new Scrape(await res.text());
}

/** Sends `count` requests, `parallel` at a time. */
async function inParallel(count: number, parallel: number, send: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (next < count) await send(next++);
    }),
  );
}

const LOOKUP_ROUTE = '/api/phone-numbers/:phone_number';

describe('GET /metrics: what moves when requests are made', () => {
  let h: Harness;
  let owner: TestAccount;

  beforeAll(async () => {
    // Failures naming one client id are refused from the third on; none is slowed.
    h = await startHarness({}, { metrics: new PrometheusMetrics(), throttle: { perClient: 2, freeFailures: 1000 } });
    owner = await h.account({ plan: 'contributor' });
  });
  afterAll(() => h?.close());

  it('answers the Prometheus text format, every family typed, with the process metrics and the security headers', async () => {
    const res = await fetch(`${h.url}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('content-security-policy')).toBe("default-src 'none'; frame-ancestors 'none'");
    const { types } = new Scrape(await res.text());
    expect(Object.fromEntries([...types].filter(([name]) => name.startsWith('tollwatch_')))).toEqual({
      tollwatch_processes: 'gauge',
      tollwatch_http_requests_total: 'counter',
      tollwatch_http_request_duration_seconds: 'histogram',
      tollwatch_events_ingested_total: 'counter',
      tollwatch_lookups_total: 'counter',
      tollwatch_tokens_issued_total: 'counter',
      tollwatch_token_refusals_total: 'counter',
      tollwatch_rate_limited_total: 'counter',
      tollwatch_allowance_notices_total: 'counter',
      tollwatch_store_up: 'gauge',
      tollwatch_fold_backlog_events: 'gauge',
      tollwatch_fold_lag_seconds: 'gauge',
      tollwatch_fold_rows_kept: 'gauge',
      tollwatch_dns_answers_total: 'counter',
      tollwatch_dns_rate_limited_total: 'counter',
      tollwatch_peer_objects_total: 'counter',
      tollwatch_peer_last_success_timestamp_seconds: 'gauge',
      tollwatch_peer_failures: 'gauge',
    });
    for (const name of ['process_cpu_seconds_total', 'process_resident_memory_bytes', 'nodejs_eventloop_lag_seconds', 'nodejs_gc_duration_seconds', 'nodejs_heap_size_used_bytes']) {
      expect(types.has(name), name).toBe(true);
    }
  });

  it('is not part of the OpenAPI document', async () => {
    const document = (await (await fetch(`${h.url}/api/openapi.json`)).json()) as { paths: Record<string, unknown> };
    expect(Object.keys(document.paths).some((path) => path.includes('metrics'))).toBe(false);
  });

  it('counts single submissions by outcome: created, replayed, conflict, invalid', async () => {
    const before = await scrape(h.url);
    const event = sampleEvent();
    expect((await postEvent(owner, event)).status).toBe(201);
    expect((await postEvent(owner, event)).status).toBe(200);
    expect((await postEvent(owner, { ...event, sip_method: 'OPTIONS' })).status).toBe(409);
    expect((await postEvent(owner, { ...sampleEvent(), source_ip: 'nope' })).status).toBe(422);
    // Not an event at all: answered 400 before the intake judges anything, so not counted.
    expect((await postEvent(owner, '{')).status).toBe(400);
    const after = await scrape(h.url);
    for (const outcome of ['created', 'replayed', 'conflict', 'invalid']) {
      const labels = { mode: 'single', outcome };
      expect(after.value('tollwatch_events_ingested_total', labels) - before.value('tollwatch_events_ingested_total', labels), outcome).toBe(1);
    }
    const created = { route: '/api/events', method: 'POST', status: '201' };
    expect(after.value('tollwatch_http_requests_total', created) - before.value('tollwatch_http_requests_total', created)).toBe(1);
  });

  it('counts the events of a batch, each by its own outcome', async () => {
    const before = await scrape(h.url);
    const existing = sampleEvent();
    expect((await postEvent(owner, existing)).status).toBe(201);
    const items = [sampleEvent(), sampleEvent(), existing, { ...existing, sip_method: 'OPTIONS' }, 'not an event'];
    const res = await owner.api('/api/events/batch', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(items) });
    expect(res.status).toBe(200);
    const after = await scrape(h.url);
    const moved = (outcome: string) => after.value('tollwatch_events_ingested_total', { mode: 'batch', outcome }) - before.value('tollwatch_events_ingested_total', { mode: 'batch', outcome });
    expect({ created: moved('created'), replayed: moved('replayed'), conflict: moved('conflict'), invalid: moved('invalid') }).toEqual({ created: 2, replayed: 1, conflict: 1, invalid: 1 });
  });

  it('counts lookups by kind and result, a bulk lookup per value, under the route pattern', async () => {
    expect((await postEvent(owner, sampleEvent({ called_number: '+46812110001', source_ip: '203.0.113.77' }))).status).toBe(201);
    const before = await scrape(h.url);
    expect((await owner.api('/api/phone-numbers/%2B46812110001')).status).toBe(200);
    expect((await owner.api('/api/phone-numbers/%2B46812110002')).status).toBe(404);
    expect((await owner.api('/api/phone-numbers/not-a-number!')).status).toBe(400);
    expect((await owner.api('/api/ip-addresses/203.0.113.77')).status).toBe(200);
    expect((await owner.api('/api/ip-addresses/198.51.100.99')).status).toBe(404);
    const bulk = await owner.api('/api/phone-numbers/lookup', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ phone_numbers: ['+46812110001', '0046812110001', '+46812110003', 'nope!', 7] }),
    });
    expect(bulk.status).toBe(200);
    const after = await scrape(h.url);
    const moved = (kind: string, mode: string, result: string) => {
      const labels = { kind, mode, result };
      return after.value('tollwatch_lookups_total', labels) - before.value('tollwatch_lookups_total', labels);
    };
    expect([moved('phone', 'single', 'found'), moved('phone', 'single', 'not_found'), moved('phone', 'single', 'invalid')]).toEqual([1, 1, 1]);
    expect([moved('ip', 'single', 'found'), moved('ip', 'single', 'not_found'), moved('ip', 'single', 'invalid')]).toEqual([1, 1, 0]);
    expect([moved('phone', 'bulk', 'found'), moved('phone', 'bulk', 'not_found'), moved('phone', 'bulk', 'invalid')]).toEqual([2, 1, 2]);

    // The route is the pattern: no series names a number that was looked up.
    const found = { route: LOOKUP_ROUTE, method: 'GET', status: '200' };
    expect(after.value('tollwatch_http_requests_total', found) - before.value('tollwatch_http_requests_total', found)).toBe(1);
    const latency = { route: LOOKUP_ROUTE, method: 'GET' };
    expect(after.value('tollwatch_http_request_duration_seconds_count', latency) - before.value('tollwatch_http_request_duration_seconds_count', latency)).toBe(3);
    expect(after.value('tollwatch_http_request_duration_seconds_bucket', { ...latency, le: '+Inf' })).toBe(after.value('tollwatch_http_request_duration_seconds_count', latency));
    const routes = new Set(after.series('tollwatch_http_requests_total').map((labels) => labels.route));
    expect([...routes].some((route) => /4681211|203\.0\.113|not-a-number/.test(route!))).toBe(false);
  });

  it('counts tokens issued, and refusals by their error code', async () => {
    const before = await scrape(h.url);
    await owner.token();
    await owner.token();
    const ask = (body: Record<string, string>) =>
      fetch(`${h.url}/oauth/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    expect((await ask({ grant_type: 'client_credentials', client_id: owner.clientId, client_secret: 'wrong' })).status).toBe(401);
    expect((await ask({ grant_type: 'password', client_id: owner.clientId, client_secret: owner.clientSecret })).status).toBe(400);
    const after = await scrape(h.url);
    expect(after.value('tollwatch_tokens_issued_total') - before.value('tollwatch_tokens_issued_total')).toBe(2);
    const refused = (reason: string) => after.value('tollwatch_token_refusals_total', { reason }) - before.value('tollwatch_token_refusals_total', { reason });
    expect(refused('invalid_client')).toBe(1);
    expect(refused('unsupported_grant_type')).toBe(1);
  });

  it('counts 429s by the limit that refused: a plan allowance, or the failed-authentication throttle', async () => {
    const tester = await h.account({ plan: 'tester' });
    const before = await scrape(h.url);
    // The tester plan allows 5 lookups an hour.
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await tester.api('/api/phone-numbers/100')).status);
    expect(statuses).toEqual([404, 404, 404, 404, 404, 429]);
    // The third failure naming one client id is refused (perClient: 2 in this harness).
    const failing: number[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${h.url}/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ grant_type: 'client_credentials', client_id: 'twc_nobody_at_all', client_secret: 'guess' }),
      });
      failing.push(res.status);
    }
    expect(failing).toEqual([401, 401, 429]);
    const after = await scrape(h.url);
    const moved = (limit: string) => after.value('tollwatch_rate_limited_total', { limit }) - before.value('tollwatch_rate_limited_total', { limit });
    expect({ lookups: moved('lookups'), submissions: moved('submissions'), auth_failures: moved('auth_failures') }).toEqual({ lookups: 1, submissions: 0, auth_failures: 1 });
    expect(after.value('tollwatch_token_refusals_total', { reason: 'rate_limited' }) - before.value('tollwatch_token_refusals_total', { reason: 'rate_limited' })).toBe(1);
    const limited = { route: LOOKUP_ROUTE, method: 'GET', status: '429' };
    expect(after.value('tollwatch_http_requests_total', limited) - before.value('tollwatch_http_requests_total', limited)).toBe(1);
  });

  it('counts 1,000 distinct unknown paths under one unmatched label, adding no series', async () => {
    // Each status an unknown path can get, once, so the baseline holds their series.
    expect((await fetch(`${h.url}/no-such-page`)).status).toBe(404);
    expect((await fetch(`${h.url}/api/no-such-resource`)).status).toBe(401);
    expect((await owner.api('/api/no-such-resource')).status).toBe(404);
    const before = await scrape(h.url);
    const seriesBefore = before.series('tollwatch_http_requests_total').length + before.series('tollwatch_http_request_duration_seconds_count').length;
    await inParallel(1000, 20, async (i) => {
      const path = [`/scan-${i}-${Math.random().toString(36).slice(2)}`, `/api/scan-${i}`, `/api/phone-numbers/${i}/extra`][i % 3]!;
      const res = await (i % 3 === 2 ? owner.api(path) : fetch(`${h.url}${path}`));
      await res.arrayBuffer();
    });
    const after = await scrape(h.url);
    expect(after.series('tollwatch_http_requests_total').length + after.series('tollwatch_http_request_duration_seconds_count').length).toBe(seriesBefore);
    const unmatched = (status: string) =>
      after.value('tollwatch_http_requests_total', { route: 'unmatched', method: 'GET', status }) - before.value('tollwatch_http_requests_total', { route: 'unmatched', method: 'GET', status });
    expect(unmatched('404') + unmatched('401')).toBe(1000);
    expect(after.samples.some((s) => Object.values(s.labels).some((value) => value.includes('scan-')))).toBe(false);
  });

  it('counts a URL the router cannot read as unmatched too, though no hook runs for it', async () => {
    const before = await scrape(h.url);
    expect((await fetch(`${h.url}/%zz-not-encoding`)).status).toBe(400);
    const after = await scrape(h.url);
    const bad = { route: 'unmatched', method: 'GET', status: '400' };
    expect(after.value('tollwatch_http_requests_total', bad) - before.value('tollwatch_http_requests_total', bad)).toBe(1);
  });

  it('reports the store up, and no coordination gauge without Redis', async () => {
    const now = await scrape(h.url);
    expect(now.value('tollwatch_store_up')).toBe(1);
    expect(now.types.has('tollwatch_coordination_up')).toBe(false);
    // An idle server has folded everything it stored.
    expect(now.value('tollwatch_fold_backlog_events')).toBe(0);
    expect(now.value('tollwatch_fold_lag_seconds')).toBe(0);
    // The tests above submitted events: the fold kept the rows it wrote of them.
    expect(now.value('tollwatch_fold_rows_kept')).toBeGreaterThan(0);
  });
});

describe('GET /metrics with TOLLWATCH_METRICS_TOKEN', () => {
  const token = 'metrics-token-0123456789abcdef';
  let h: Harness;

  beforeAll(async () => {
    h = await startHarness({ TOLLWATCH_METRICS_TOKEN: token }, { metrics: new PrometheusMetrics() });
  });
  afterAll(() => h?.close());

  it('answers 401 with a Bearer challenge without the token, or with a wrong one', async () => {
    const missing = await fetch(`${h.url}/metrics`);
    expect(missing.status).toBe(401);
    expect(missing.headers.get('www-authenticate')).toBe('Bearer realm="tollwatch-metrics"');
    expect(missing.headers.get('x-content-type-options')).toBe('nosniff');
    expect(await missing.text()).not.toContain('tollwatch_');
    for (const authorization of [`Bearer ${token}x`, `Bearer ${token.slice(0, -1)}`, 'Bearer wrong', `Basic ${Buffer.from(`x:${token}`).toString('base64')}`, token]) {
      const wrong = await fetch(`${h.url}/metrics`, { headers: { authorization } });
      expect(wrong.status, authorization).toBe(401);
      expect(wrong.headers.get('www-authenticate')).toBe('Bearer realm="tollwatch-metrics", error="invalid_token"');
      expect(await wrong.text()).not.toContain('tollwatch_');
    }
  });

  it('answers 200 with the token, whatever the case of the scheme', async () => {
    for (const scheme of ['Bearer', 'bearer']) {
      const res = await fetch(`${h.url}/metrics`, { headers: { authorization: `${scheme} ${token}` } });
      expect(res.status).toBe(200);
      expect(await res.text()).toContain('# TYPE tollwatch_http_requests_total counter');
    }
  });

  it('counts the refused scrapes like any answer', async () => {
    const now = await scrape(h.url, { authorization: `Bearer ${token}` });
    expect(now.value('tollwatch_http_requests_total', { route: '/metrics', method: 'GET', status: '401' })).toBeGreaterThanOrEqual(6);
  });
});

describe('GET /metrics without a token: local clients only', () => {
  let h: Harness;

  beforeAll(async () => {
    // The proxy on loopback is trusted, so X-Forwarded-For names the client it serves.
    h = await startHarness({ HOST: '0.0.0.0', TOLLWATCH_TRUST_PROXY: 'loopback' }, { metrics: new PrometheusMetrics() });
  });
  afterAll(() => h?.close());

  it('answers a client on loopback, and a remote client through a trusted proxy 403 without a counter', async () => {
    const local = await fetch(`${h.url}/metrics`);
    expect(local.status).toBe(200);
    expect(await local.text()).toContain('tollwatch_events_ingested_total');
    for (const client of ['203.0.113.9', '10.1.2.3', '2001:db8::1']) {
      const remote = await fetch(`${h.url}/metrics`, { headers: { 'x-forwarded-for': client } });
      expect(remote.status, client).toBe(403);
      expect(remote.headers.get('cache-control')).toBe('no-store');
      expect(await remote.text()).not.toContain('tollwatch_');
    }
    // A forwarded local client (a scraper beside the proxy) is local.
    expect((await fetch(`${h.url}/metrics`, { headers: { 'x-forwarded-for': '127.0.0.1' } })).status).toBe(200);
  });
});

describe.skipIf(redisServerMissing)('GET /metrics with Redis: coordination health', () => {
  let redis: PrivateRedis;
  let h: Harness;

  beforeAll(async () => {
    redis = await privateRedis();
    h = await startHarness({ REDIS_URL: redis.url }, { metrics: new PrometheusMetrics() });
  });
  afterAll(async () => {
    await h?.close();
    await redis?.stop();
  });

  it('is 1 while Redis answers, 0 once it is gone, and 1 again when it is back', async () => {
    const until = async (value: number) => {
      for (let i = 0; i < 100; i++) {
        if ((await scrape(h.url)).value('tollwatch_coordination_up') === value) return;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      throw new Error(`tollwatch_coordination_up never became ${value}`);
    };
    await until(1);
    await redis.stop();
    await until(0);
    await redis.start();
    await until(1);
  });
});

/** A GET on a connection of its own: the cluster's primary deals connections to its workers in turn. */
function getOnNewConnection(url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    get(url, { agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    }).on('error', reject);
  });
}

/** The real server in a process of its own, over a fresh store, for the describe block it is called in. */
function serverProcessWith(env: Record<string, string>): () => ServerProcess {
  let database: TestDatabase;
  let server: ServerProcess;
  beforeAll(async () => {
    database = await freshDatabase();
    server = await startServerProcess({ DATABASE_URL: database.url, ...env });
  });
  afterAll(async () => {
    await server?.stop();
    await database?.drop();
  });
  return () => server;
}

describe('GET /metrics under WORKERS=2: the sum over both workers, whichever answers', () => {
  const server = serverProcessWith({ WORKERS: '2' });

  it('every scrape counts every worker’s answers', async () => {
    const { url } = server();
    // startServerProcess waited for one worker; count once both serve, so that both answer.
    for (let i = 0; ; i++) {
      const res = await getOnNewConnection(`${url}/metrics`);
      // Both serving, and both have probed the store once (a worker reports it down until then).
      if (res.status === 200 && new Scrape(res.body).value('tollwatch_processes') === 2 && new Scrape(res.body).value('tollwatch_store_up') === 1) break;
      if (i === 100) throw new Error('the second worker never served');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    for (let i = 0; i < 8; i++) expect((await getOnNewConnection(`${url}/healthz`)).status).toBe(200);
    const counts: number[] = [];
    const storeUp: number[] = [];
    for (let i = 0; i < 4; i++) {
      const res = await getOnNewConnection(`${url}/metrics`);
      expect(res.status).toBe(200);
      const scraped = new Scrape(res.body);
      counts.push(scraped.value('tollwatch_http_requests_total', { route: '/healthz', method: 'GET', status: '200' }));
      storeUp.push(scraped.value('tollwatch_store_up'));
    }
    // Each worker answered some of the 8 (connections are dealt in turn); every scrape, whichever
    // worker took it, has them all. (The readiness polls went to /readyz, not /healthz.)
    expect(counts).toEqual([8, 8, 8, 8]);
    expect(storeUp).toEqual([1, 1, 1, 1]);
  });
});

describe('TOLLWATCH_METRICS=off', () => {
  const server = serverProcessWith({ TOLLWATCH_METRICS: 'off' });

  it('serves no /metrics', async () => {
    expect((await fetch(`${server().url}/metrics`)).status).toBe(404);
  });
});

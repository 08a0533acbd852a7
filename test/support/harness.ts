import type { FastifyInstance } from 'fastify';
import { buildApp, type AppOptions } from '../../src/app.ts';
import { loadConfig, type Config } from '../../src/config.ts';
import type { Account } from '../../src/domain/accounts/accounts.ts';
import { validateHoneypotEvent, type HoneypotEvent } from '../../src/domain/events/honeypot-event.ts';
import { createServices, type ServiceOptions, type Services } from '../../src/services.ts';
import { AnswerConformance } from './openapi-conformance.ts';
import { freshDatabase } from './test-database.ts';

/** A running service on a real port over a fresh store, made for one test file. */
export interface Harness {
  url: string;
  config: Config;
  services: Services;
  app: FastifyInstance;
  /** Holds every answer against the published OpenAPI document; close() fails on a disagreement. */
  conformance: AnswerConformance;
  /** Creates an account and a client; `permissions` default as the CLI's. */
  account(options?: { plan?: string; trusted?: boolean; permissions?: string[] }): Promise<TestAccount>;
  /**
   * Folds every stored event into the lookup aggregates. Lookups see their own account's events
   * at once; another account's within the fold's bound (docs/api.md §7): a test looking up what
   * a different account stored waits here instead of racing the fold.
   */
  settled(): Promise<void>;
  close(): Promise<void>;
}

export interface TestAccount {
  account: Account;
  clientId: string;
  clientSecret: string;
  /** Fetches a fresh access token from the token endpoint. */
  token(): Promise<string>;
  /** An authenticated request with a cached token. */
  api(path: string, init?: RequestInit): Promise<Response>;
}

/** The audience the recorded SentryPeer node asks for, accepted alongside our own. */
export const SENTRYPEER_AUDIENCE = 'https://sentrypeer.com/api';

/**
 * Starts a service over a fresh store of the run's kind; `env` overrides configuration (a
 * given DATABASE_URL shares another harness's store, which that harness removes).
 */
export async function startHarness(env: Record<string, string> = {}, options: ServiceOptions = {}, appOptions: AppOptions = {}): Promise<Harness> {
  const database = env.DATABASE_URL ? undefined : await freshDatabase();
  const config = loadConfig(
    {
      DATABASE_URL: database?.url ?? '',
      PORT: '0',
      TOLLWATCH_PUBLIC_URL: 'http://tollwatch.test',
      TOLLWATCH_AUDIENCE: `http://tollwatch.test/api,${SENTRYPEER_AUDIENCE}`,
      LOG_LEVEL: 'silent',
      // The PostgreSQL runs' key secret (vitest.config.ts); SQLite stores use their key file.
      ...(process.env.TOLLWATCH_KEY_SECRET ? { TOLLWATCH_KEY_SECRET: process.env.TOLLWATCH_KEY_SECRET } : {}),
      ...env,
    },
    false,
  );
  const services = await createServices(config, options);
  const app = await buildApp(services, appOptions);
  // PORT 0 (the default here) takes any free port; a test that must know it first passes one.
  await app.listen({ port: config.port, host: '127.0.0.1' });
  services.aggregateFolder.start();
  // Every answer is held against the OpenAPI document the server publishes (docs/api.md §1).
  const conformance = AnswerConformance.attach(app, app.server);
  const address = app.server.address();
  if (!address || typeof address === 'string') throw new Error('no port');
  const url = `http://127.0.0.1:${address.port}`;

  return {
    url,
    config,
    services,
    app,
    async account(options = {}) {
      const account = await services.accounts.createAccount({
        name: `test-${Math.random().toString(36).slice(2)}`,
        plan: options.plan ?? 'contributor',
        trusted: options.trusted ?? false,
      });
      const client = await services.accounts.createClient({
        accountId: account.account_id,
        name: 'test client',
        permissions: options.permissions,
      });
      let cached: string | undefined;
      const token = async () => {
        const res = await fetch(`${url}/oauth/token`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            client_id: client.client_id,
            client_secret: client.client_secret,
            audience: config.audiences[0],
            grant_type: 'client_credentials',
          }),
        });
        if (res.status !== 200) throw new Error(`token request failed: ${res.status} ${await res.text()}`);
        return ((await res.json()) as { access_token: string }).access_token;
      };
      return {
        account,
        clientId: client.client_id,
        clientSecret: client.client_secret,
        token,
        async api(path, init = {}) {
          cached ??= await token();
          const headers = new Headers(init.headers);
          if (!headers.has('authorization')) headers.set('authorization', `Bearer ${cached}`);
          return fetch(`${url}${path}`, { ...init, headers });
        },
      };
    },
    conformance,
    settled: () => services.aggregateFolder.settle(),
    async close() {
      await app.close();
      await services.close();
      await database?.drop();
      if (conformance.violations.length > 0) {
        const distinct = [...new Set(conformance.violations)];
        if (process.env.OPENAPI_VIOLATIONS_LOG) (await import('node:fs')).appendFileSync(process.env.OPENAPI_VIOLATIONS_LOG, `${distinct.join('\n')}\n`);
        throw new Error(`answers disagree with the OpenAPI document:\n${distinct.join('\n')}`);
      }
    },
  };
}

/**
 * How long after its 201 an event is counted by lookups on every instance (docs/api.md §7):
 * the fold's turn, a fold, and a cached answer's life.
 */
export const LOOKUP_VISIBILITY_MS = 1000;

/** Asks `probe` until it answers true or `ms` have passed; its last answer. */
export async function within(ms: number, probe: () => Promise<boolean>): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await probe()) return true;
    if (Date.now() >= deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A plan without practical limits, for tests that send thousands of requests. */
export async function saveUnlimitedPlan(h: Harness, name = 'unlimited'): Promise<string> {
  await h.services.plans.save({
    name,
    maySubmit: true,
    lookups: { limit: 1e9, windowSeconds: 3600 },
    submissions: { limit: 1e9, windowSeconds: 3600 },
    maxClients: null,
    eventReads: { limit: 1e9, windowSeconds: 3600 },
  });
  return name;
}

let counter = 0;

/**
 * The sample events' day: yesterday (UTC) when the suite started. Windows counted back from now
 * (a node's week of silence, a feed's days, a score's decay) then hold the samples whatever day
 * the suite runs; a fixed date left them one by one (the silent-node alert on 2026-11-28).
 */
export const SAMPLE_DAY = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);

/** An event time `minutes` ago, in the form a SentryPeer node writes (`2026-11-22 06:25:32.918`). */
export function ago(minutes: number): string {
  return new Date(Date.now() - minutes * 60_000).toISOString().replace('T', ' ').replace('Z', '');
}

/** A valid 13-field event; every call gets a fresh event_uuid unless overridden. */
export function sampleEvent(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  counter += 1;
  const uuid = crypto.randomUUID();
  return {
    app_name: 'sentrypeer',
    app_version: '4.0.6',
    event_timestamp: `${SAMPLE_DAY} 10:00:${String(counter % 60).padStart(2, '0')}.123456789`,
    event_uuid: uuid,
    created_by_node_id: '732e7f50-637d-4fde-81e0-5c32f1bb5a92',
    collected_method: 'responsive',
    transport_type: 'UDP',
    source_ip: '203.0.113.7',
    destination_ip: '198.51.100.2',
    called_number: '0046812118532',
    sip_method: 'INVITE',
    sip_user_agent: 'friendly-scanner',
    sip_message: 'INVITE sip:0046812118532@198.51.100.2 SIP/2.0\r\nCSeq: 1 INVITE\r\n\r\n',
    ...overrides,
  };
}

/** A sample event as intake's validation leaves it, for tests that write through the store directly. */
export function validSampleEvent(overrides: Record<string, unknown> = {}, now = new Date()): HoneypotEvent {
  const result = validateHoneypotEvent(sampleEvent(overrides), now);
  if (!result.ok) throw new Error(JSON.stringify(result.errors));
  return result.event;
}

/** POSTs an event as JSON with an account's token. */
export function postEvent(who: TestAccount, event: unknown, headers: Record<string, string> = {}) {
  return who.api('/api/events', {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof event === 'string' ? event : JSON.stringify(event),
  });
}


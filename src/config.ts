import { isIP } from 'node:net';
import { envSchema } from 'env-schema';
import { Type, type Static } from 'typebox';
import type { AuditRetentionPolicy } from './domain/accounts/audit.ts';
import { DEFAULT_DNS_ALLOW, settleDnsSettings, type DnsSettings } from './dns/dns-settings.ts';
import { parseKeySecret } from './domain/accounts/key-sealing.ts';
import { DEFAULT_HALF_LIFE_DAYS, type ScoringSettings } from './domain/intelligence/scores.ts';
import { MAX_TOKEN_LIFETIME_SECONDS } from './oauth/token-lifetime.ts';
import { settleOidcSettings, type OidcSettings } from './sso/oidc-settings.ts';

/** The environment the service reads; defaults as in docs/api.md §10. */
const ConfigSchema = Type.Object({
  PORT: Type.Integer({ default: 8080, minimum: 0, maximum: 65535 }),
  HOST: Type.String({ default: '127.0.0.1' }),
  DATABASE_URL: Type.String({ default: 'sqlite:./data/tollwatch.db' }),
  DATABASE_READ_URL: Type.Optional(Type.String()),
  REDIS_URL: Type.Optional(Type.String()),
  WORKERS: Type.Integer({ default: 1, minimum: 1, maximum: 64 }),
  TOLLWATCH_RETENTION_DAYS: Type.Optional(Type.Integer({ minimum: 1 })),
  TOLLWATCH_SQLITE_CACHE_MB: Type.Integer({ default: 64, minimum: 1, maximum: 65_536 }),
  TOLLWATCH_LOOKUP_CACHE_MS: Type.Optional(Type.Integer({ minimum: 0, maximum: 60_000 })),
  TOLLWATCH_DIRECT_LOOKUPS: Type.Union([Type.Literal('on'), Type.Literal('off')], { default: 'on' }),
  TOLLWATCH_DIRECT_INTAKE: Type.Union([Type.Literal('on'), Type.Literal('off')], { default: 'on' }),
  TOLLWATCH_PUBLIC_URL: Type.Optional(Type.String()),
  TOLLWATCH_ISSUER: Type.Optional(Type.String()),
  TOLLWATCH_AUDIENCE: Type.Optional(Type.String()),
  TOLLWATCH_TOKEN_TTL: Type.Integer({ default: 86_400, minimum: 60, maximum: MAX_TOKEN_LIFETIME_SECONDS }),
  TOLLWATCH_BASIC_AUTH: Type.Union([Type.Literal('on'), Type.Literal('off')], { default: 'on' }),
  TOLLWATCH_AUTH_FAILURES_PER_ADDRESS: Type.Integer({ default: 30, minimum: 1 }),
  TOLLWATCH_AUTH_FAILURES_PER_CLIENT: Type.Integer({ default: 100, minimum: 1 }),
  TOLLWATCH_MAX_CONNECTIONS: Type.Integer({ default: 4096, minimum: 1 }),
  TOLLWATCH_MAX_CONNECTIONS_PER_ADDRESS: Type.Integer({ default: 256, minimum: 1 }),
  TOLLWATCH_REQUEST_TIMEOUT: Type.Integer({ default: 30, minimum: 1, description: 'seconds' }),
  TOLLWATCH_TRUST_PROXY: Type.Optional(Type.String()),
  TOLLWATCH_METRICS: Type.Union([Type.Literal('on'), Type.Literal('off')], { default: 'on' }),
  TOLLWATCH_METRICS_TOKEN: Type.Optional(Type.String()),
  TOLLWATCH_KEY_SECRET: Type.Optional(Type.String()),
  TOLLWATCH_AUDIT_RETENTION_DAYS: Type.Integer({ default: 90, minimum: 1 }),
  TOLLWATCH_AUDIT_MAX_FAILURE_ROWS: Type.Integer({ default: 100_000, minimum: 1 }),
  TOLLWATCH_OIDC_ISSUER: Type.Optional(Type.String({ description: 'docs/operations.md, "Single sign-on"' })),
  TOLLWATCH_OIDC_CLIENT_ID: Type.Optional(Type.String()),
  TOLLWATCH_OIDC_CLIENT_SECRET: Type.Optional(Type.String()),
  TOLLWATCH_OIDC_NAME: Type.Optional(Type.String()),
  TOLLWATCH_OIDC_EMAIL_DOMAINS: Type.Optional(Type.String()),
  TOLLWATCH_SIGN_UP: Type.Union([Type.Literal('open'), Type.Literal('invitation')], { default: 'invitation' }),
  TOLLWATCH_SIGN_UP_PLAN: Type.String({ default: 'tester', minLength: 1 }),
  TOLLWATCH_CONTRIBUTOR_APPROVAL: Type.Union([Type.Literal('manual'), Type.Literal('automatic')], { default: 'manual' }),
  TOLLWATCH_SESSION_IDLE: Type.Integer({ default: 1800, minimum: 1, description: 'seconds' }),
  TOLLWATCH_SESSION_MAX: Type.Integer({ default: 43_200, minimum: 1, description: 'seconds' }),
  TOLLWATCH_NODE_SILENT_AFTER: Type.Integer({ default: 3600, minimum: 1, description: 'seconds' }),
  TOLLWATCH_SCORE_HALF_LIFE_DAYS: Type.Number({ default: DEFAULT_HALF_LIFE_DAYS, exclusiveMinimum: 0, maximum: 36_500, description: 'days (docs/scoring.md)' }),
  TOLLWATCH_SMTP_URL: Type.Optional(Type.String()),
  TOLLWATCH_MAIL_FROM: Type.Optional(Type.String()),
  TOLLWATCH_ALLOW_PRIVATE_TARGETS: Type.Union([Type.Literal('on'), Type.Literal('off')], { default: 'off' }),
  TOLLWATCH_NODE_SILENT_CHECK: Type.Integer({ default: 300, minimum: 1, description: 'seconds' }),
  TOLLWATCH_TAXII_MIN_SCORE: Type.Integer({ default: 50, minimum: 1, maximum: 100, description: 'docs/taxii.md' }),
  TOLLWATCH_TAXII_RETENTION_DAYS: Type.Integer({ default: 30, minimum: 1, description: 'days' }),
  TOLLWATCH_TAXII_PUBLISH_INTERVAL: Type.Integer({ default: 10, minimum: 1, maximum: 3600, description: 'seconds' }),
  TOLLWATCH_DNS_LISTEN: Type.Optional(Type.String({ description: 'docs/dns.md' })),
  TOLLWATCH_DNS_NUMBER_ZONE: Type.String({ default: 'numbers.tollwatch.internal' }),
  TOLLWATCH_DNS_ADDRESS_ZONE: Type.String({ default: 'addresses.tollwatch.internal' }),
  TOLLWATCH_DNS_MIN_SCORE: Type.Integer({ default: 50, minimum: 1, maximum: 100 }),
  TOLLWATCH_DNS_TTL: Type.Integer({ default: 60, minimum: 0, maximum: 86_400, description: 'seconds' }),
  TOLLWATCH_DNS_NEGATIVE_TTL: Type.Integer({ default: 60, minimum: 0, maximum: 86_400, description: 'seconds' }),
  TOLLWATCH_DNS_NAME_SERVER: Type.Optional(Type.String()),
  TOLLWATCH_DNS_ALLOW: Type.String({ default: DEFAULT_DNS_ALLOW }),
  TOLLWATCH_DNS_RATE_LIMIT: Type.Integer({ default: 100, minimum: 1, description: 'answers per second per client network' }),
  LOG_LEVEL: Type.Union(
    ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l)),
    { default: 'info' },
  ),
});

type RawConfig = Static<typeof ConfigSchema>;

/** Settled configuration: every derived default filled in. */
export interface Config {
  port: number;
  host: string;
  databaseUrl: string;
  /** A replica for lookups; lookups read the main store when unset. */
  databaseReadUrl: string | undefined;
  redisUrl: string | undefined;
  /** Processes serving one port (node:cluster). */
  workers: number;
  /** Events older than this many days are removed; kept forever when unset. */
  retentionDays: number | undefined;
  /** SQLite's own page cache, on top of the operating system's file cache. */
  sqliteCacheMiB: number;
  /**
   * How long a lookup's aggregates are answered from memory at most (0: never): how late a
   * lookup may see an event stored by another process or instance. This process's own are seen at once.
   */
  lookupCacheMs: number;
  /** Lookups answered ahead of Fastify when everything is in memory (http/lanes/direct-lookups.ts). */
  directLookups: boolean;
  /** Single events submitted ahead of Fastify when the headers leave nothing to decide (http/lanes/direct-intake.ts). */
  directIntake: boolean;
  publicUrl: string;
  issuer: string;
  /** Accepted `audience` values at the token endpoint and in `aud`. */
  audiences: string[];
  tokenTtlSeconds: number;
  basicAuth: boolean;
  /** Failed authentications answered 401 per 15 minutes; later ones get 429. Valid credentials never do. */
  authThrottle: { perAddress: number; perClient: number };
  /** Open connections beyond this are dropped; past 90% of it idle kept-alive ones are closed to make room. */
  maxConnections: number;
  /**
   * Open connections of one TCP peer (an IPv4 address, an IPv6 /64) beyond this are closed at
   * once; trusted proxies have no such cap.
   */
  maxConnectionsPerAddress: number;
  /** A request (headers and body) must arrive within this; slow clients are cut off. */
  requestTimeoutMs: number;
  /**
   * Whose `X-Forwarded-For` names the client address (Fastify's `trustProxy`): every peer's
   * (`true`), or only peers in these addresses and ranges. Unset: the socket's address, which
   * behind a proxy is the proxy's (and every client then shares its failure throttle).
   */
  trustProxy: true | string[] | undefined;
  /** Whether `GET /metrics` is served and the process collects metrics at all. */
  metrics: boolean;
  /** The Bearer token `GET /metrics` requires; open to anyone who reaches it when unset. */
  metricsToken: string | undefined;
  /**
   * Encrypts the keys the store holds. Unset: a key file beside a SQLite store, made on first
   * start (src/store/maintenance/keys-at-rest.ts); PostgreSQL refuses to start without it.
   */
  keySecret: Uint8Array | undefined;
  /** How long audit rows are kept, and how many failed-authentication rows at most. */
  auditRetention: AuditRetentionPolicy;
  /** The dashboard (docs/dashboard.md): self sign-up, session lifetimes, when a node counts as silent. */
  dashboard: DashboardConfig;
  /** Single sign-on to the dashboard through an OpenID provider; off when unset. */
  oidc: OidcSettings | undefined;
  /** How lookup scores weigh evidence by its age (docs/scoring.md). */
  scoring: ScoringSettings;
  /** The TAXII collections (docs/taxii.md): their threshold, how long old versions stay, how often the publisher looks. */
  taxii: { minScore: number; retentionDays: number; publishIntervalMs: number };
  /** Alert delivery (docs/operations.md, "Alerts"). */
  alerts: {
    /** nodemailer's SMTP URL; email integrations are refused without it. */
    smtpUrl: string | undefined;
    /** The From of alert mail. */
    mailFrom: string;
    /** Webhook and Slack targets on loopback, private and other non-public addresses, and plain http:, are allowed. */
    allowPrivateTargets: boolean;
    /** A node with no event for this long is silent. */
    silentAfterMs: number;
    /** How often silent nodes are looked for. */
    silentCheckMs: number;
  };
  /** The DNS zones (docs/dns.md): the server's address (unset: off), the zones, who may ask. */
  dns: DnsSettings;
  logLevel: string;
}

export interface DashboardConfig {
  /** Anyone may sign up at /sign-up (TOLLWATCH_SIGN_UP=open); only invited users otherwise. */
  signup: boolean;
  /** The plan of an account made by sign-up; the start checks it exists. */
  signUpPlan: string;
  /** `automatic`: a request for the contributor plan is approved as soon as it is made. */
  contributorApproval: 'manual' | 'automatic';
  /** A session unused this long ends. */
  sessionIdleSeconds: number;
  /** A session ends this long after sign-in. */
  sessionMaxSeconds: number;
  /** A node that sent nothing for this long is marked silent. */
  nodeSilentAfterSeconds: number;
  /** Session cookies carry `Secure`: the public URL is https. */
  secureCookies: boolean;
}

/** Reads configuration from an environment (and `.env` when `dotenv` is true). */
export function loadConfig(env: Record<string, string | undefined> = process.env, dotenv = true): Config {
  // Only the environment given: env-schema would otherwise lay `process.env` under it, so a
  // caller's environment could never leave a variable out.
  const raw = envSchema<RawConfig>({ schema: ConfigSchema, data: env, dotenv, env: false });
  return settleConfig(raw);
}

function settleConfig(raw: RawConfig): Config {
  const publicUrl = stripSlash(raw.TOLLWATCH_PUBLIC_URL ?? `http://localhost:${raw.PORT}`);
  const audiences = (raw.TOLLWATCH_AUDIENCE ?? `${publicUrl}/api`)
    .split(',')
    .map((a) => a.trim())
    .filter((a) => a.length > 0);
  return {
    port: raw.PORT,
    host: raw.HOST,
    databaseUrl: raw.DATABASE_URL,
    databaseReadUrl: raw.DATABASE_READ_URL || undefined,
    redisUrl: raw.REDIS_URL || undefined,
    workers: raw.WORKERS,
    retentionDays: raw.TOLLWATCH_RETENTION_DAYS,
    sqliteCacheMiB: raw.TOLLWATCH_SQLITE_CACHE_MB,
    // Every fold, here or in another process, drops the keys it changed from the cache, so its
    // lifetime only bounds changes nobody announces. Not so with a read replica: a lookup told
    // of a change may read the replica before the change reaches it, and keep the old rows.
    lookupCacheMs: raw.TOLLWATCH_LOOKUP_CACHE_MS ?? 60_000,
    directLookups: raw.TOLLWATCH_DIRECT_LOOKUPS === 'on',
    directIntake: raw.TOLLWATCH_DIRECT_INTAKE === 'on',
    publicUrl,
    issuer: raw.TOLLWATCH_ISSUER ?? publicUrl,
    audiences,
    tokenTtlSeconds: raw.TOLLWATCH_TOKEN_TTL,
    basicAuth: raw.TOLLWATCH_BASIC_AUTH === 'on',
    authThrottle: { perAddress: raw.TOLLWATCH_AUTH_FAILURES_PER_ADDRESS, perClient: raw.TOLLWATCH_AUTH_FAILURES_PER_CLIENT },
    maxConnections: raw.TOLLWATCH_MAX_CONNECTIONS,
    maxConnectionsPerAddress: raw.TOLLWATCH_MAX_CONNECTIONS_PER_ADDRESS,
    requestTimeoutMs: raw.TOLLWATCH_REQUEST_TIMEOUT * 1000,
    trustProxy: parseTrustProxy(raw.TOLLWATCH_TRUST_PROXY),
    metrics: raw.TOLLWATCH_METRICS === 'on',
    metricsToken: parseMetricsToken(raw.TOLLWATCH_METRICS_TOKEN),
    keySecret: readKeySecret(raw.TOLLWATCH_KEY_SECRET),
    auditRetention: { days: raw.TOLLWATCH_AUDIT_RETENTION_DAYS, maxFailureRows: raw.TOLLWATCH_AUDIT_MAX_FAILURE_ROWS },
    dashboard: {
      signup: openSignUp(raw),
      signUpPlan: raw.TOLLWATCH_SIGN_UP_PLAN.trim(),
      contributorApproval: raw.TOLLWATCH_CONTRIBUTOR_APPROVAL,
      sessionIdleSeconds: raw.TOLLWATCH_SESSION_IDLE,
      sessionMaxSeconds: raw.TOLLWATCH_SESSION_MAX,
      nodeSilentAfterSeconds: raw.TOLLWATCH_NODE_SILENT_AFTER,
      secureCookies: publicUrl.startsWith('https:'),
    },
    oidc: settleOidcSettings(raw, publicUrl),
    scoring: { halfLifeDays: raw.TOLLWATCH_SCORE_HALF_LIFE_DAYS },
    taxii: { minScore: raw.TOLLWATCH_TAXII_MIN_SCORE, retentionDays: raw.TOLLWATCH_TAXII_RETENTION_DAYS, publishIntervalMs: raw.TOLLWATCH_TAXII_PUBLISH_INTERVAL * 1000 },
    alerts: {
      smtpUrl: raw.TOLLWATCH_SMTP_URL || undefined,
      mailFrom: raw.TOLLWATCH_MAIL_FROM || `Tollwatch <alerts@${new URL(publicUrl).hostname}>`,
      allowPrivateTargets: raw.TOLLWATCH_ALLOW_PRIVATE_TARGETS === 'on',
      silentAfterMs: raw.TOLLWATCH_NODE_SILENT_AFTER * 1000,
      silentCheckMs: raw.TOLLWATCH_NODE_SILENT_CHECK * 1000,
    },
    dns: settleDnsSettings(raw, publicUrl),
    logLevel: raw.LOG_LEVEL,
  };
}

/** Open sign-up proves each address by a mailed link, so it cannot work without mail. */
function openSignUp(raw: RawConfig): boolean {
  if (raw.TOLLWATCH_SIGN_UP !== 'open') return false;
  if (!raw.TOLLWATCH_SMTP_URL) throw new Error('TOLLWATCH_SIGN_UP=open needs TOLLWATCH_SMTP_URL: a sign-up is confirmed by a link mailed to its address');
  return true;
}

/** The shortest metrics token taken: /metrics allows any number of guesses, so it must be unguessable. */
const MIN_METRICS_TOKEN_LENGTH = 16;

/** The metrics token; empty is unset (as in a `.env` line `TOLLWATCH_METRICS_TOKEN=`). */
function parseMetricsToken(value: string | undefined): string | undefined {
  if (value === undefined || value === '') return undefined;
  if (value.length < MIN_METRICS_TOKEN_LENGTH || /\s/.test(value)) {
    throw new Error(`TOLLWATCH_METRICS_TOKEN must be at least ${MIN_METRICS_TOKEN_LENGTH} characters without spaces (e.g. \`openssl rand -hex 32\`)`);
  }
  return value;
}

/** The key secret, refused at start when it is no 32-byte key (an empty value means unset). */
function readKeySecret(value: string | undefined): Uint8Array | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  try {
    return parseKeySecret(value);
  } catch (err) {
    // The message never repeats the value: it is a secret even when malformed.
    throw new Error(`TOLLWATCH_KEY_SECRET: ${(err as Error).message}`);
  }
}

/** The names @fastify/proxy-addr knows for the usual private ranges. */
const PROXY_RANGE_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);

/**
 * `true`/`false`, or a comma-separated list of addresses, CIDR ranges (`10.0.0.0/8`,
 * `10.0.0.0/255.0.0.0`) and range names. A bare hop count is refused rather than passed on:
 * Fastify 5 ignores one (it cannot tell a proxy from a client that adds hops of its own), and
 * an operator who set it would believe addresses were being read that were not.
 */
function parseTrustProxy(value: string | undefined): true | string[] | undefined {
  const text = value?.trim() ?? '';
  if (text === '' || text === 'false') return undefined;
  if (text === 'true') return true;
  if (/^\d+$/.test(text)) {
    throw new Error(`TOLLWATCH_TRUST_PROXY=${text}: a hop count cannot check who the nearest hop is; list the proxies' addresses or ranges instead`);
  }
  const entries = text.split(',').map((entry) => entry.trim()).filter((entry) => entry.length > 0);
  for (const entry of entries) {
    if (!isProxyAddress(entry)) throw new Error(`TOLLWATCH_TRUST_PROXY: "${entry}" is not an address, a CIDR range or one of ${[...PROXY_RANGE_NAMES].join(', ')}`);
  }
  return entries;
}

function isProxyAddress(entry: string): boolean {
  if (PROXY_RANGE_NAMES.has(entry) || isIP(entry) !== 0) return true;
  const slash = entry.indexOf('/');
  if (slash < 0) return false;
  const family = isIP(entry.slice(0, slash));
  const range = entry.slice(slash + 1);
  if (family === 0) return false;
  if (/^\d{1,3}$/.test(range)) return Number(range) <= (family === 4 ? 32 : 128);
  return family === 4 && isIP(range) === 4;
}

function stripSlash(url: string): string {
  return url.endsWith('/') ? url.slice(0, -1) : url;
}

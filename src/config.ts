import { envSchema } from 'env-schema';
import { Type, type Static } from 'typebox';

/** The environment the service reads; defaults as in CONTRACT §10. */
const ConfigSchema = Type.Object({
  PORT: Type.Integer({ default: 8080, minimum: 0, maximum: 65535 }),
  HOST: Type.String({ default: '127.0.0.1' }),
  DATABASE_URL: Type.String({ default: 'sqlite:./data/tollwatch.db' }),
  DATABASE_READ_URL: Type.Optional(Type.String()),
  REDIS_URL: Type.Optional(Type.String()),
  WORKERS: Type.Integer({ default: 1, minimum: 1, maximum: 64 }),
  TOLLWATCH_RETENTION_DAYS: Type.Optional(Type.Integer({ minimum: 1 })),
  TOLLWATCH_SQLITE_CACHE_MB: Type.Integer({ default: 64, minimum: 1, maximum: 65_536 }),
  TOLLWATCH_PUBLIC_URL: Type.Optional(Type.String()),
  TOLLWATCH_ISSUER: Type.Optional(Type.String()),
  TOLLWATCH_AUDIENCE: Type.Optional(Type.String()),
  TOLLWATCH_TOKEN_TTL: Type.Integer({ default: 86_400, minimum: 60, maximum: 31 * 86_400 }),
  TOLLWATCH_BASIC_AUTH: Type.Union([Type.Literal('on'), Type.Literal('off')], { default: 'on' }),
  TOLLWATCH_AUTH_FAILURES_PER_ADDRESS: Type.Integer({ default: 30, minimum: 1 }),
  TOLLWATCH_AUTH_FAILURES_PER_CLIENT: Type.Integer({ default: 100, minimum: 1 }),
  TOLLWATCH_MAX_CONNECTIONS: Type.Integer({ default: 4096, minimum: 1 }),
  TOLLWATCH_REQUEST_TIMEOUT: Type.Integer({ default: 30, minimum: 1, description: 'seconds' }),
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
  publicUrl: string;
  issuer: string;
  /** Accepted `audience` values at the token endpoint and in `aud`. */
  audiences: string[];
  tokenTtlSeconds: number;
  basicAuth: boolean;
  /** Failed authentications answered 401 per 15 minutes; later ones get 429. Valid credentials never do. */
  authThrottle: { perAddress: number; perClient: number };
  /** Open connections beyond this are dropped. */
  maxConnections: number;
  /** A request (headers and body) must arrive within this; slow clients are cut off. */
  requestTimeoutMs: number;
  logLevel: string;
}

/** Reads configuration from an environment (and `.env` when `dotenv` is true). */
export function loadConfig(env: Record<string, string | undefined> = process.env, dotenv = true): Config {
  const raw = envSchema<RawConfig>({ schema: ConfigSchema, data: env, dotenv });
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
    publicUrl,
    issuer: raw.TOLLWATCH_ISSUER ?? publicUrl,
    audiences,
    tokenTtlSeconds: raw.TOLLWATCH_TOKEN_TTL,
    basicAuth: raw.TOLLWATCH_BASIC_AUTH === 'on',
    authThrottle: { perAddress: raw.TOLLWATCH_AUTH_FAILURES_PER_ADDRESS, perClient: raw.TOLLWATCH_AUTH_FAILURES_PER_CLIENT },
    maxConnections: raw.TOLLWATCH_MAX_CONNECTIONS,
    requestTimeoutMs: raw.TOLLWATCH_REQUEST_TIMEOUT * 1000,
    logLevel: raw.LOG_LEVEL,
  };
}

function stripSlash(url: string): string {
  return url.endsWith('/') ? url.slice(0, -1) : url;
}

import cluster from 'node:cluster';
import type { Logger } from 'pino';
import type { Config } from './config.ts';
import { AccountsService } from './domain/accounts.ts';
import type { AuditTrail } from './domain/audit.ts';
import { EventImport, type ImportSource } from './domain/event-import.ts';
import { EventIntake } from './domain/event-intake.ts';
import { EventQuery } from './domain/event-query.ts';
import { IngestUrls } from './domain/ingest-urls.ts';
import { LookupService } from './domain/lookup-service.ts';
import { RedisCoordination } from './coordination/redis-coordination.ts';
import { NO_METRICS, type Metrics } from './metrics/metrics.ts';
import { PlanCatalog } from './domain/plans.ts';
import { DEFAULT_THROTTLE, FailureThrottle, type ThrottleSettings } from './limits/failure-throttle.ts';
import { clusterLimiters, memoryLimiters, PlanLimiter, type LimiterFactory } from './limits/plan-limiter.ts';
import { AccessTokens } from './oauth/access-tokens.ts';
import { ApiAuthenticator } from './oauth/api-authenticator.ts';
import { CredentialsCache } from './oauth/credentials-cache.ts';
import { SigningKeys } from './oauth/signing-keys.ts';
import { SqlAccountsRepository } from './store/accounts-repository.ts';
import { rebuildAggregates } from './store/aggregates-rebuild.ts';
import { SqlAuditTrail } from './store/audit-trail.ts';
import { openDatabase, openReadDatabase, type Database } from './store/database.ts';
import { SqlEventsRepository } from './store/events-repository.ts';
import { openImportSource, type DatabaseDefaults } from './store/import-sources.ts';
import { SqlIngestUrlsRepository } from './store/ingest-urls-repository.ts';
import { GroupCommit } from './store/group-commit.ts';
import { WriterThread } from './store/writer-thread.ts';
import { SqlLookupsRepository } from './store/lookups-repository.ts';
import { SqlPlansRepository } from './store/plans-repository.ts';
import { SqlServerSecrets } from './store/server-secrets-repository.ts';

/** Everything the HTTP layer and the CLI call, wired to one store. */
export interface Services {
  config: Config;
  database: Database;
  plans: PlanCatalog;
  audit: AuditTrail;
  limiter: PlanLimiter;
  authFailures: FailureThrottle;
  accounts: AccountsService;
  accountsRepo: SqlAccountsRepository;
  tokens: AccessTokens;
  authenticator: ApiAuthenticator;
  credentials: CredentialsCache;
  intake: EventIntake;
  /** Node ingest URLs: a secret in the path instead of a token (docs/api.md §11). */
  ingestUrls: IngestUrls;
  eventQuery: EventQuery;
  /** The operator's bulk import of SentryPeer logs and databases into an account (docs/operations.md). */
  importer: EventImport;
  /** Opens a SentryPeer JSON log or SQLite database for `importer`. */
  openImportSource(path: string, defaults: DatabaseDefaults): Promise<ImportSource>;
  lookups: LookupService;
  /** What the HTTP layer and the token endpoint count; counts nothing unless the server asked for metrics. */
  metrics: Metrics;
  /** Recomputes every lookup aggregate from the stored events (after bulk loads or trust changes). */
  rebuildAggregates(): Promise<void>;
  close(): Promise<void>;
}

/** How long a cached client may be trusted before it is read again (the revocation bound). */
const CREDENTIALS_TTL_MS = 1000;
/** How long the plan table is kept before it is read again. */
const PLANS_TTL_MS = 5000;

export interface ServiceOptions {
  /** Receives the structured audit lines. */
  log?: Logger;
  /** How failed authentications are slowed and refused. */
  throttle?: Partial<ThrottleSettings>;
  /** Where counts go; nowhere when absent (the CLI). The server passes its Prometheus metrics. */
  metrics?: Metrics;
}

/** Opens the store and builds the services over it. */
export async function createServices(config: Config, options: ServiceOptions = {}): Promise<Services> {
  const { log, metrics = NO_METRICS } = options;
  const database = await openDatabase(config.databaseUrl, { sqliteCacheMiB: config.sqliteCacheMiB });
  // With Redis, counters and access-change notices are shared by every instance.
  const redis = config.redisUrl ? new RedisCoordination(config.redisUrl, log) : undefined;
  const audit = new SqlAuditTrail(database.db, log);
  const plans = new PlanCatalog(new SqlPlansRepository(database.db), PLANS_TTL_MS, {
    externalChangeCounter: database.externalChangeCounter,
    onSaved: () => redis?.announceAccessChange(),
    audit,
  });
  const accountsRepo = new SqlAccountsRepository(database.db);
  const credentials = new CredentialsCache(accountsRepo, CREDENTIALS_TTL_MS, database.externalChangeCounter);
  const forget = () => {
    credentials.clear();
    plans.clear();
  };
  await redis?.onAccessChange(forget);
  const accounts = new AccountsService(accountsRepo, plans, audit, () => {
    forget();
    redis?.announceAccessChange();
  });
  const limiters: LimiterFactory = redis ? redis.limiters() : cluster.isWorker ? clusterLimiters : memoryLimiters;
  const keys = await SigningKeys.open(database.db);
  const tokens = new AccessTokens(keys, {
    issuer: config.issuer,
    audiences: config.audiences,
    ttlSeconds: config.tokenTtlSeconds,
  });
  const replica = config.databaseReadUrl ? openReadDatabase(config.databaseReadUrl, config.sqliteCacheMiB) : undefined;
  const eventsRepo = new SqlEventsRepository(database.db, database.ingestWrites);
  // Concurrent submissions are committed together: one transaction and one WAL flush for many
  // events, each answered only after that commit. A SQLite file is written by a thread of its
  // own, one group at a time, while the next group gathers.
  const writer = database.intakeOnWriterThread ? new WriterThread(config.databaseUrl, config.sqliteCacheMiB, log) : undefined;
  const ingestRepo = writer ? new GroupCommit(eventsRepo, writer, 1) : new GroupCommit(eventsRepo);
  const intake = new EventIntake(ingestRepo, plans);
  const ingestUrls = new IngestUrls({
    repo: new SqlIngestUrlsRepository(database.db),
    getAccount: (accountId) => accounts.getAccount(accountId),
    assertMaySubmit: (account) => intake.assertMaySubmit(account),
    publicUrl: config.publicUrl,
    audit,
  });
  // Read at each scrape: the store by the readiness check's query, Redis by what its
  // connection last showed (no command of its own).
  metrics.watchHealth({ store: () => database.ping(), coordination: redis && (() => redis.reachable) });
  return {
    config,
    database,
    plans,
    audit,
    limiter: new PlanLimiter(limiters),
    authFailures: new FailureThrottle(limiters, { ...DEFAULT_THROTTLE, ...config.authThrottle, ...options.throttle }),
    accounts,
    accountsRepo,
    tokens,
    authenticator: new ApiAuthenticator(tokens, credentials),
    credentials,
    intake,
    ingestUrls,
    eventQuery: await EventQuery.open(eventsRepo, new SqlServerSecrets(database.db)),
    // Straight on this process's connection, not through group commit or the writer thread:
    // an import is the only writer of its process, and its transactions are large already.
    importer: new EventImport(eventsRepo, (accountId) => accounts.getAccount(accountId), audit),
    openImportSource,
    lookups: new LookupService(new SqlLookupsRepository((replica ?? database).db, (replica ?? database).statements)),
    metrics,
    rebuildAggregates: () => rebuildAggregates(database.db),
    async close() {
      await writer?.close();
      await redis?.close();
      await replica?.close();
      await database.close();
    },
  };
}

import cluster from 'node:cluster';
import type { Logger } from 'pino';
import type { Config } from './config.ts';
import { AccountsService } from './domain/accounts.ts';
import type { AuditTrail } from './domain/audit.ts';
import { EventImport, type ImportSource } from './domain/event-import.ts';
import { EventIntake } from './domain/event-intake.ts';
import { EventQuery } from './domain/event-query.ts';
import { IngestUrls } from './domain/ingest-urls.ts';
import { FeedService } from './domain/feed-service.ts';
import { KnownKeys } from './domain/known-keys.ts';
import { LookupCache } from './domain/lookup-cache.ts';
import { LookupService } from './domain/lookup-service.ts';
import { RangeLookupService } from './domain/range-lookup.ts';
import { RedisCoordination } from './coordination/redis-coordination.ts';
import { NO_METRICS, type Metrics } from './metrics/metrics.ts';
import { PlanCatalog } from './domain/plans.ts';
import { DEFAULT_THROTTLE, FailureThrottle, type ThrottleSettings } from './limits/failure-throttle.ts';
import { clusterLimiters, memoryLimiters, PlanLimiter, type LimiterFactory } from './limits/plan-limiter.ts';
import { DEFAULT_SIGN_IN_LOCKS, SignInLocks, type SignInLockSettings } from './limits/sign-in-locks.ts';
import { AccessTokens } from './oauth/access-tokens.ts';
import { ApiAuthenticator } from './oauth/api-authenticator.ts';
import { CredentialsCache } from './oauth/credentials-cache.ts';
import type { AccessChangeNotices } from './domain/access-changes.ts';
import { SigningKeys } from './oauth/signing-keys.ts';
import { SqlAccountsRepository } from './store/accounts-repository.ts';
import { foldStep, keysFoldedBetween } from './store/aggregate-fold.ts';
import { SqlAggregateKeys } from './store/aggregate-keys.ts';
import { AggregateFolder, DEFAULT_FOLDER_SETTINGS, FOLDED_ELSEWHERE_READ } from './store/aggregate-folder.ts';
import { rebuildAggregates } from './store/aggregates-rebuild.ts';
import { AuditRetention } from './store/audit-retention.ts';
import { SqlAuditTrail } from './store/audit-trail.ts';
import { openDatabase, openReadDatabase, type Database } from './store/database.ts';
import { dropEventQueryIndexes, ensureEventQueryIndexes } from './store/event-indexes.ts';
import { SqlEventsRepository } from './store/events-repository.ts';
import { openImportSource, type DatabaseDefaults } from './store/import-sources.ts';
import { SqlIngestUrlsRepository } from './store/ingest-urls-repository.ts';
import { GroupCommit } from './store/group-commit.ts';
import { WriterThread } from './store/writer-thread.ts';
import { SqlFeedsRepository } from './store/feeds-repository.ts';
import { SqlLookupsRepository } from './store/lookups-repository.ts';
import { SqlPlansRepository } from './store/plans-repository.ts';
import { resolveKeySecret, sealKeysAtRest } from './store/keys-at-rest.ts';
import { SqlServerSecrets } from './store/server-secrets-repository.ts';
import { AccountActivity } from './domain/account-activity.ts';
import { Sessions } from './domain/sessions.ts';
import { UsersService } from './domain/users.ts';
import { SqlAccountActivityRepository } from './store/account-activity-repository.ts';
import { SqlUsersRepository } from './store/users-repository.ts';
import { Integrations } from './domain/integrations.ts';
import { LookupAlerts } from './domain/lookup-alerts.ts';
import { DeliveryWorker, type DeliverySettings } from './delivery/delivery-worker.ts';
import { SmtpMailer } from './delivery/mailer.ts';
import { TargetGuard } from './delivery/target-guard.ts';
import { SqlAlertOutbox } from './store/alert-outbox.ts';
import { SqlIntegrationsRepository } from './store/integrations-repository.ts';
import { backupStore, type BackupReport } from './store/backup.ts';

/** Why a store cannot be backed up by `backup`, asked before it is opened (the CLI, on PostgreSQL). */
export { backupRefusal } from './store/backup.ts';

/** Everything the HTTP layer and the CLI call, wired to one store. */
export interface Services {
  config: Config;
  database: Database;
  plans: PlanCatalog;
  audit: AuditTrail;
  /** Keeps the audit log bounded; the store maintenance runs it hourly too. */
  auditRetention: AuditRetention;
  limiter: PlanLimiter;
  authFailures: FailureThrottle;
  /** Bounds password guessing at the dashboard's sign-in, per email and per address. */
  signInLocks: SignInLocks;
  accounts: AccountsService;
  tokens: AccessTokens;
  /** The keys tokens are signed and verified with (tests sign genuine tokens with them). */
  signingKeys: SigningKeys;
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
  /** Range lookups by a hash prefix (docs/api.md §13). */
  rangeLookups: RangeLookupService;
  /** Blocklist feeds (docs/api.md §14). */
  feeds: FeedService;
  /** Dashboard users and their one-time links (docs/dashboard.md). */
  users: UsersService;
  /** Dashboard sessions, kept in the store. */
  sessions: Sessions;
  /** Counts over an account's own events: its nodes and its overview. */
  activity: AccountActivity;
  /**
   * Folds stored events into the lookup aggregates behind intake. The server starts its turns;
   * `settle()` folds everything stored so far (the CLI after an import).
   */
  aggregateFolder: AggregateFolder;
  /** Where an account's alerts go (docs/api.md §12). */
  integrations: Integrations;
  /** `lookup.matched` alerts gathered off the answer's path; `flush()` writes them now (tests). */
  lookupAlerts: LookupAlerts;
  /** Works the alert outbox; started by the server once it listens (app.ts), stopped by close(). */
  alertWorker: DeliveryWorker;
  /** What the HTTP layer and the token endpoint count; counts nothing unless the server asked for metrics. */
  metrics: Metrics;
  /** Recomputes every lookup aggregate from the stored events (after bulk loads or trust changes). */
  rebuildAggregates(): Promise<void>;
  /** Copies a SQLite store into a new file while it is in use (docs/operations.md, Backups). */
  backup(destination: string): Promise<BackupReport>;
  close(): Promise<void>;
}

/**
 * How long a cached client may be trusted before it is read again: the revocation bound of last
 * resort, for a change whose notice did not arrive (Redis or the listening connection away).
 */
const CREDENTIALS_TTL_MS = 1000;
/** How long the plan table is kept before it is read again, likewise the bound when no notice arrives. */
const PLANS_TTL_MS = 5000;
/** Most lookup answers kept in memory of each kind: (key, scopes) pairs, a few hundred bytes each. */
const LOOKUP_CACHE_ENTRIES = 100_000;
/**
 * How long "never seen" is answered from memory (at most TOLLWATCH_LOOKUP_CACHE_MS): numbers
 * never seen mostly come once each, and kept longer they would fill the cache (lookup-cache.ts).
 */
const LOOKUP_CACHE_MISSING_MS = 1000;

export interface ServiceOptions {
  /** Receives the structured audit lines. */
  log?: Logger;
  /** How failed authentications are slowed and refused. */
  throttle?: Partial<ThrottleSettings>;
  /** How many password guesses sign-in allows (DEFAULT_SIGN_IN_LOCKS); tests lower them. */
  signInLocks?: Partial<SignInLockSettings>;
  /** Where counts go; nowhere when absent (the CLI). The server passes its Prometheus metrics. */
  metrics?: Metrics;
  /** How long signing keys are used before the store is read again (KEYS_RELOAD_MS); tests shorten it. */
  keysReloadMs?: number;
  /** How long a cached client is trusted (CREDENTIALS_TTL_MS); tests lengthen it to show notices, not the bound, at work. */
  credentialsTtlMs?: number;
  /** How long the plan table is kept (PLANS_TTL_MS); likewise. */
  plansTtlMs?: number;
  /** Alert timings (ALERT_DEFAULTS); tests shorten them. */
  alerts?: Partial<AlertSettings>;
  /** Access-token lifetime in seconds instead of TOLLWATCH_TOKEN_TTL; tests go below its 60-second floor to see renewals. */
  tokenTtlSeconds?: number;
}

/** How alerts are gathered, de-duplicated and delivered. */
export interface AlertSettings extends Omit<DeliverySettings, 'silentAfterMs' | 'silentCheckMs'> {
  /** One alert per subject and type within this window. */
  dedupWindowMs: number;
  /** How long `lookup.matched` alerts gather before they are written together. */
  lookupFlushMs: number;
  /** Request timeout of a webhook or Slack delivery. */
  timeoutMs: number;
}

const ALERT_DEFAULTS: AlertSettings = {
  pollMs: 1000,
  batch: 20,
  leaseMs: 120_000,
  // A day of retries (retryForMs), doubling to an hour: about 40 attempts; the cap is a backstop.
  maxAttempts: 50,
  retryForMs: 24 * 3600_000,
  retryBaseMs: 10_000,
  retryMaxMs: 3600_000,
  throttlePerSubject: 5,
  throttleWindowMs: 24 * 3600_000,
  throttlePerAccountHour: 100,
  silentLookbackMs: 7 * 24 * 3600_000,
  retentionMs: 30 * 24 * 3600_000,
  dedupWindowMs: 3600_000,
  lookupFlushMs: 1000,
  timeoutMs: 10_000,
};

/** Opens the store and builds the services over it; the store is closed again if that fails. */
export async function createServices(config: Config, options: ServiceOptions = {}): Promise<Services> {
  const database = await openDatabase(config.databaseUrl, { sqliteCacheMiB: config.sqliteCacheMiB });
  try {
    return await servicesOver(database, config, options);
  } catch (err) {
    await database.close();
    throw err;
  }
}

async function servicesOver(database: Database, config: Config, options: ServiceOptions): Promise<Services> {
  const { log, metrics = NO_METRICS } = options;
  // Before anything reads a key: a wrong key secret stops the start here, and keys written in
  // plain text by an earlier version are sealed, unchanged, so issued tokens stay good.
  const keySecret = await resolveKeySecret(config.keySecret, config.databaseUrl, database);
  const { sealed } = await sealKeysAtRest(database, keySecret);
  if (sealed > 0) log?.info({ sealed, key: keySecret.origin }, 'keys in the store sealed with the key secret');
  // With Redis, counters and access-change notices are shared by every instance.
  const redis = config.redisUrl ? new RedisCoordination(config.redisUrl, log) : undefined;
  // On PostgreSQL, notices also go through the database itself (LISTEN/NOTIFY), Redis or not:
  // so revocation reaches every instance at once without Redis, and from a CLI run without
  // REDIS_URL. Both at once only clear a cache twice.
  const storeNotices = database.changeNotices?.(log);
  const notices: AccessChangeNotices[] = [...(redis ? [redis] : []), ...(storeNotices ? [storeNotices] : [])];
  const announce = () => {
    for (const channel of notices) channel.announceAccessChange();
  };
  const auditRetention = new AuditRetention(database, config.auditRetention, log);
  const audit = new SqlAuditTrail(database.db, log, auditRetention);
  const plans = new PlanCatalog(new SqlPlansRepository(database.db), options.plansTtlMs ?? PLANS_TTL_MS, {
    externalChangeCounter: database.externalChangeCounter,
    onSaved: announce,
    audit,
  });
  const accountsRepo = new SqlAccountsRepository(database.db);
  const credentials = new CredentialsCache(accountsRepo, options.credentialsTtlMs ?? CREDENTIALS_TTL_MS, database.externalChangeCounter);
  // A rotation is announced like an access change: every instance then signs with the new key
  // from its next token, instead of at its next reload (KEYS_RELOAD_MS).
  const keys = await SigningKeys.open(database.db, keySecret.sealer, {
    reloadMs: options.keysReloadMs,
    onRotated: announce,
    audit,
  });
  const forget = () => {
    credentials.clear();
    plans.clear();
    keys.markStale();
  };
  await Promise.all(notices.map((channel) => channel.onAccessChange(forget)));
  const accounts = new AccountsService(accountsRepo, plans, audit, () => {
    forget();
    announce();
  });
  const limiters: LimiterFactory = redis ? redis.limiters() : cluster.isWorker ? clusterLimiters : memoryLimiters;
  const serverSecrets = new SqlServerSecrets(database.db, keySecret.sealer);
  const tokens = new AccessTokens(keys, {
    issuer: config.issuer,
    audiences: config.audiences,
    ttlSeconds: options.tokenTtlSeconds ?? config.tokenTtlSeconds,
  });
  const replica = config.databaseReadUrl ? openReadDatabase(config.databaseReadUrl, config.sqliteCacheMiB) : undefined;
  const lookupsRepo = new SqlLookupsRepository((replica ?? database).db, (replica ?? database).statements);
  const eventsRepo = new SqlEventsRepository(database.db, database.ingestWrites);
  // Concurrent submissions are committed together: one transaction and one WAL flush for many
  // events, each answered only after that commit. A SQLite file is written by a thread of its
  // own, one group at a time, while the next group gathers.
  const writer = database.intakeOnWriterThread ? new WriterThread(config.databaseUrl, config.sqliteCacheMiB, log) : undefined;
  // Lookup aggregates are folded in behind intake, by the writer thread where there is one.
  // It also reads what other processes folded (instances, workers, the CLI), so caches drop those keys too.
  const aggregateFolder = new AggregateFolder(
    writer ? (chunk) => writer.foldStep(chunk) : (chunk) => foldStep(database, chunk),
    DEFAULT_FOLDER_SETTINGS,
    log,
    (after, upTo) => keysFoldedBetween(database.db, after, upTo, FOLDED_ELSEWHERE_READ),
  );
  const folding = { onCommitted: (keysByAccount: Map<string, Set<string>>, events: number) => aggregateFolder.committed(keysByAccount, events), beforeCommit: () => aggregateFolder.roomForIntake() };
  // One group at a time on the writer thread: what arrives meanwhile waits and forms the next,
  // larger group. Two in flight (the next group queued on the thread while one commits) made
  // smaller groups and fewer events a second: 5,459–5,779 against 6,049–6,303 single events a
  // second, alternating runs of `BENCH_PHASES=3 npm run bench` on 2026-11-24.
  const ingestRepo = new GroupCommit(eventsRepo, writer, writer ? { maxInFlight: 1, ...folding } : folding);
  const intake = new EventIntake(ingestRepo, plans);
  // Lookups answer repeated questions from memory; the fold drops the keys it changed.
  const lookupCache = new LookupCache({ ttlMs: config.lookupCacheMs, missingTtlMs: LOOKUP_CACHE_MISSING_MS, maxEntries: LOOKUP_CACHE_ENTRIES });
  // Lookups of keys the aggregates cannot hold (most numbers never seen) skip the store; loaded
  // from what lookups read at the first lookup, and told of every fold like the cache.
  const knownKeys = new KnownKeys(new SqlAggregateKeys((replica ?? database).db), (err) => log?.warn({ err }, 'loading the known lookup keys failed; lookups read the store meanwhile'));
  aggregateFolder.onChanges((changes) => {
    if (changes === 'everything') {
      lookupCache.clear();
      return knownKeys.reload();
    }
    const changed = [...changes.numbers.map((key) => ({ kind: 'number' as const, key })), ...changes.addresses.map((key) => ({ kind: 'ip' as const, key }))];
    knownKeys.add(changed);
    lookupCache.invalidate(changed);
  });
  const ingestUrls = new IngestUrls({
    repo: new SqlIngestUrlsRepository(database.db),
    getAccount: (accountId) => accounts.getAccount(accountId),
    assertMaySubmit: (account) => intake.assertMaySubmit(account),
    publicUrl: config.publicUrl,
    audit,
  });
  const usersRepo = new SqlUsersRepository(database.db);
  const sessions = new Sessions(usersRepo, { idleSeconds: config.dashboard.sessionIdleSeconds, absoluteSeconds: config.dashboard.sessionMaxSeconds });
  const mailer = new SmtpMailer(config.alerts.smtpUrl, config.alerts.mailFrom);
  const users = new UsersService({ repo: usersRepo, accounts, audit, endSessions: (userId) => sessions.endAll(userId), publicUrl: config.publicUrl, mailer });
  const alertSettings: AlertSettings = { ...ALERT_DEFAULTS, ...options.alerts };
  const outbox = new SqlAlertOutbox(database.db, database.caps, keySecret.sealer);
  const guard = new TargetGuard(config.alerts.allowPrivateTargets);
  const lookupAlerts = new LookupAlerts(
    outbox,
    { flushMs: alertSettings.lookupFlushMs, maxBuffered: 1000, dedupWindowMs: alertSettings.dedupWindowMs },
    (err) => log?.warn({ err }, 'lookup.matched alerts not written'),
  );
  const integrations = new Integrations({
    repo: new SqlIntegrationsRepository(database.db, keySecret.sealer),
    targets: guard,
    mailer,
    enqueue: async (alerts) => {
      await outbox.enqueueSubscribed(alerts);
    },
    // Lookups here learn at once that their account now has (or lost) a lookup.matched integration.
    changed: (accountId) => lookupAlerts.forget(accountId),
    publicUrl: config.publicUrl,
    audit,
  });
  const alertWorker = new DeliveryWorker(
    outbox,
    { guard, mailer, timeoutMs: alertSettings.timeoutMs },
    { ...alertSettings, silentAfterMs: config.alerts.silentAfterMs, silentCheckMs: config.alerts.silentCheckMs },
    log,
  );
  // Read at each scrape: the store by the readiness check's query, Redis by what its
  // connection last showed (no command of its own).
  metrics.watchHealth({ store: () => database.ping(), coordination: redis && (() => redis.reachable), foldBacklog: () => aggregateFolder.backlog });
  return {
    config,
    database,
    plans,
    audit,
    auditRetention,
    // Alone, allowances are counted in memory; shared counters only where others share them.
    limiter: new PlanLimiter(redis || cluster.isWorker ? limiters : undefined),
    authFailures: new FailureThrottle(limiters, { ...DEFAULT_THROTTLE, ...config.authThrottle, ...options.throttle }),
    signInLocks: new SignInLocks(limiters, {
      ...DEFAULT_SIGN_IN_LOCKS,
      perAddress: { ...DEFAULT_SIGN_IN_LOCKS.perAddress, short: config.authThrottle.perAddress },
      ...options.signInLocks,
    }),
    accounts,
    tokens,
    signingKeys: keys,
    authenticator: new ApiAuthenticator(tokens, credentials),
    credentials,
    intake,
    ingestUrls,
    eventQuery: await EventQuery.open(eventsRepo, serverSecrets),
    // Not through group commit (its transactions are large already), but on the writer thread
    // where there is one, so the import reads and checks its next batch meanwhile.
    importer: new EventImport(
      writer ? { ingest: async (owner, events) => (await writer.ingestGroups([{ owner, events }]))[0] ?? [] } : eventsRepo,
      (accountId) => accounts.getAccount(accountId),
      audit,
      {
        drop: () => dropEventQueryIndexes(database.db),
        build: async () => {
          await ensureEventQueryIndexes(database.db, database.caps);
        },
      },
    ),
    openImportSource,
    users,
    sessions,
    activity: new AccountActivity(new SqlAccountActivityRepository(database.db)),
    rangeLookups: new RangeLookupService(lookupsRepo, aggregateFolder, config.scoring),
    feeds: new FeedService(new SqlFeedsRepository((replica ?? database).db, lookupsRepo), aggregateFolder, config.scoring, undefined, await serverSecrets.read('feed-tag')),
    aggregateFolder,
    lookups: new LookupService(lookupsRepo, { ownWrites: aggregateFolder, observer: lookupAlerts, scoring: config.scoring, cache: lookupCache, knownKeys }),
    integrations,
    lookupAlerts,
    alertWorker,
    metrics,
    backup: (destination) => backupStore(database, destination, config.keySecret !== undefined, config.databaseUrl),
    async rebuildAggregates() {
      await rebuildAggregates(database.db, database.caps);
      lookupCache.clear();
      knownKeys.reload();
    },
    async close() {
      await aggregateFolder.stop();
      knownKeys.stop();
      await alertWorker.stop();
      await lookupAlerts.flush();
      mailer.close();
      await writer?.close();
      await redis?.close();
      await storeNotices?.close();
      await replica?.close();
      await database.close();
    },
  };
}

import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import { RedisCoordination } from '../coordination/redis-coordination.ts';
import type { AccessChangeNotices } from '../domain/accounts/access-changes.ts';
import { PlanCatalog } from '../domain/accounts/plans.ts';
import { SmtpMailer } from '../delivery/mailer.ts';
import type { Metrics } from '../metrics/metrics.ts';
import { AuditRetention } from '../store/maintenance/audit-retention.ts';
import { SqlAuditTrail } from '../store/repositories/audit-trail.ts';
import { openReadDatabase, type Database } from '../store/database.ts';
import { resolveKeySecret, sealKeysAtRest } from '../store/maintenance/keys-at-rest.ts';
import { SqlPlansRepository } from '../store/repositories/plans-repository.ts';
import { SqlServerSecrets } from '../store/repositories/server-secrets-repository.ts';
import { WriterThread } from '../store/writer/writer-thread.ts';
import { AuditRowsOnWriter } from '../store/writer/writes-on-writer.ts';
import type { KeySealer } from '../domain/accounts/key-sealing.ts';

/** How long the plan table is kept before it is read again: the bound when no change notice arrives. */
const PLANS_TTL_MS = 5000;

/** What every feature is built on: the store and its helpers, the notices, the audit trail, the plans. */
export interface Foundation {
  config: Config;
  database: Database;
  /** Where lookups, feeds and the known keys read: the replica of DATABASE_READ_URL, else the store. */
  reads: Database;
  log?: Logger;
  metrics: Metrics;
  /** Seals what the store keeps secret (signing keys, webhook secrets) with the key secret. */
  sealer: KeySealer;
  /** Shared counters and notices between instances, with REDIS_URL. */
  redis?: RedisCoordination;
  /**
   * A SQLite file's writer thread: intake's group commits, folds and imports run on it, off the
   * thread that answers requests. None on PostgreSQL.
   */
  writer?: WriterThread;
  audit: SqlAuditTrail;
  /** Keeps the audit log bounded; the store maintenance runs it hourly too. */
  auditRetention: AuditRetention;
  plans: PlanCatalog;
  serverSecrets: SqlServerSecrets;
  mailer: SmtpMailer;
  /** Tells every instance that access changed (a client revoked, a plan edited, a key rotated). */
  announce(): void;
  /** Calls `listener` whenever any instance announces an access change. */
  onAccessChange(listener: () => void): Promise<void>;
  close(): Promise<void>;
}

export interface FoundationOptions {
  log?: Logger;
  metrics: Metrics;
  /** How long the plan table is kept (PLANS_TTL_MS); tests lengthen it to show notices, not the bound, at work. */
  plansTtlMs?: number;
}

export async function assembleFoundation(database: Database, config: Config, options: FoundationOptions): Promise<Foundation> {
  const { log, metrics } = options;
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
  const writer = database.intakeOnWriterThread ? new WriterThread(config.databaseUrl, config.sqliteCacheMiB, log) : undefined;
  const auditRetention = new AuditRetention(database, config.auditRetention, log, writer);
  const audit = new SqlAuditTrail(database.db, log, auditRetention, writer && new AuditRowsOnWriter(writer));
  const plans = new PlanCatalog(new SqlPlansRepository(database.db), options.plansTtlMs ?? PLANS_TTL_MS, {
    externalChangeCounter: database.externalChangeCounter,
    onSaved: announce,
    audit,
  });
  const replica = config.databaseReadUrl ? openReadDatabase(config.databaseReadUrl, config.sqliteCacheMiB) : undefined;
  const mailer = new SmtpMailer(config.alerts.smtpUrl, config.alerts.mailFrom);
  return {
    config,
    database,
    reads: replica ?? database,
    log,
    metrics,
    sealer: keySecret.sealer,
    redis,
    writer,
    audit,
    auditRetention,
    plans,
    serverSecrets: new SqlServerSecrets(database.db, keySecret.sealer),
    mailer,
    announce,
    async onAccessChange(listener) {
      await Promise.all(notices.map((channel) => channel.onAccessChange(listener)));
    },
    async close() {
      mailer.close();
      await writer?.close();
      await redis?.close();
      await storeNotices?.close();
      await replica?.close();
    },
  };
}

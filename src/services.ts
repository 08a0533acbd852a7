import type { Logger } from 'pino';
import { assembleAggregates, type AggregatePipeline } from './assembly/aggregates.ts';
import { assembleAlerts, type AlertsAssembly, type AlertSettings } from './assembly/alerts.ts';
import { assembleAuth, type AuthOptions, type AuthAssembly } from './assembly/auth.ts';
import { assembleCommunity, type CommunityAssembly } from './assembly/community.ts';
import { assembleFederation, type FederationAssembly, type FederationSettings } from './assembly/federation.ts';
import { assembleFoundation } from './assembly/foundation.ts';
import { assembleIntake, type IntakeAssembly } from './assembly/intake.ts';
import { assembleLeaving, type LeavingAssembly } from './assembly/leaving.ts';
import { assembleLookups, type LookupsAssembly } from './assembly/lookups.ts';
import { assembleTaxii, type TaxiiAssembly } from './assembly/taxii.ts';
import { assembleReports, type ReportsAssembly } from './assembly/reports.ts';
import { assembleSso, type SsoAssembly } from './assembly/sso.ts';
import type { Config } from './config.ts';
import type { AuditTrail } from './domain/accounts/audit.ts';
import type { PlanCatalog } from './domain/accounts/plans.ts';
import { NO_METRICS, type Metrics } from './metrics/metrics.ts';
import type { AuditRetention } from './store/maintenance/audit-retention.ts';
import { backupStore, type BackupReport } from './store/maintenance/backup.ts';
import { openDatabase, type Database } from './store/database.ts';
import { removeExpiredSignInRows } from './store/maintenance/expired-sign-in-rows.ts';
import { StoreMaintenance } from './store/maintenance/maintenance.ts';

/** Why a store cannot be backed up by `backup`, asked before it is opened (the CLI, on PostgreSQL). */
export { backupRefusal } from './store/maintenance/backup.ts';

/**
 * Everything the HTTP layer and the CLI call, wired to one store: each feature's group, built by
 * its assembler in `src/assembly/`. A route takes the members it uses (`Pick<Services, …>`).
 */
export interface Services extends AuthAssembly, IntakeAssembly, Pick<AggregatePipeline, 'aggregateFolder' | 'rebuildAggregates' | 'lookupCache' | 'replicaReads'>, LookupsAssembly, AlertsAssembly, TaxiiAssembly, ReportsAssembly, FederationAssembly, SsoAssembly, CommunityAssembly, LeavingAssembly {
  config: Config;
  database: Database;
  plans: PlanCatalog;
  audit: AuditTrail;
  /** Keeps the audit log bounded; the store maintenance runs it hourly too. */
  auditRetention: AuditRetention;
  /** Partitions, retention and the audit log's bounds, hourly in one serving process (src/server.ts). */
  storeMaintenance: StoreMaintenance;
  /** What the HTTP layer and the token endpoint count; counts nothing unless the server asked for metrics. */
  metrics: Metrics;
  /** Copies a SQLite store into a new file while it is in use (docs/operations.md, Backups). */
  backup(destination: string): Promise<BackupReport>;
  close(): Promise<void>;
}

export interface ServiceOptions extends AuthOptions {
  /** Receives the structured audit lines. */
  log?: Logger;
  /** Where counts go; nowhere when absent (the CLI). The server passes its Prometheus metrics. */
  metrics?: Metrics;
  /** How long the plan table is kept (PLANS_TTL_MS); tests lengthen it to show notices, not the bound, at work. */
  plansTtlMs?: number;
  /** Alert timings (ALERT_DEFAULTS); tests shorten them. */
  alerts?: Partial<AlertSettings>;
  /** How long the accepted false-positive reports are kept (5 s); tests lengthen it to show notices, not the bound, at work. */
  acceptedReportsTtlMs?: number;
  /** The TAXII publisher's clock; tests move it to see scores decay. */
  taxiiClock?: () => Date;
  /** The peer poller's and its client's bounds (docs/federation.md, "Limits"); tests shorten them. */
  federation?: Partial<FederationSettings>;
}

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
  const metrics = options.metrics ?? NO_METRICS;
  const base = await assembleFoundation(database, config, { log: options.log, metrics, plansTtlMs: options.plansTtlMs });
  const auth = await assembleAuth(base, options);
  const community = await assembleCommunity(base, auth);
  const aggregates = assembleAggregates(base);
  const intake = await assembleIntake(base, auth, aggregates);
  const alerts = assembleAlerts(base, auth, options.alerts);
  const reports = await assembleReports(base, options.acceptedReportsTtlMs);
  const lookups = await assembleLookups(base, aggregates, alerts.lookupAlerts, reports.acceptedReports);
  const taxii = assembleTaxii(base, lookups.allowlists, options.taxiiClock, reports.acceptedReports, lookups.peerEvidence);
  const federation = assembleFederation(base, options.federation);
  const sso = assembleSso(base, auth);
  const leaving = assembleLeaving(base, auth);
  // Read at each scrape: the store by the readiness check's query, Redis by what its
  // connection last showed (no command of its own).
  const { redis } = base;
  const maintenance = new StoreMaintenance(database, config.retentionDays, options.log, base.auditRetention, base.writer);
  // An account left closing (a crash, a restart mid-way) is finished at start and at every pass.
  maintenance.alsoEachPass(() => leaving.accountClosing.finishAll());
  // Sign-in steps left unfinished go even while nobody signs in (each kind is swept as the next is made, too).
  maintenance.alsoEachPass(() => removeExpiredSignInRows(database.db));
  metrics.watchHealth({ store: () => database.ping(), coordination: redis && (() => redis.reachable), foldBacklog: () => aggregates.aggregateFolder.backlog, foldLagMs: () => aggregates.aggregateFolder.lagMs, foldRowsKept: () => aggregates.aggregateFolder.rowsKept, peers: () => federation.peers.list() });
  return {
    config,
    database,
    plans: base.plans,
    audit: base.audit,
    auditRetention: base.auditRetention,
    // On a SQLite file its passes run on the writer thread, as the main thread's other background writes do.
    storeMaintenance: maintenance,
    metrics,
    ...auth,
    ...intake,
    aggregateFolder: aggregates.aggregateFolder,
    rebuildAggregates: aggregates.rebuildAggregates,
    lookupCache: aggregates.lookupCache,
    replicaReads: aggregates.replicaReads,
    ...lookups,
    integrations: alerts.integrations,
    lookupAlerts: alerts.lookupAlerts,
    alertWorker: alerts.alertWorker,
    ...taxii,
    ...reports,
    ...federation,
    ...sso,
    ...community,
    ...leaving,
    backup: (destination) => backupStore(database, destination, config.keySecret !== undefined, config.databaseUrl),
    async close() {
      await aggregates.stop();
      await alerts.stop();
      await taxii.taxiiPublisher.stop();
      await federation.peerPoller.stop();
      // The last interval's uses, written before the store closes.
      await auth.clientActivity.close();
      await base.close();
      await database.close();
    },
  };
}

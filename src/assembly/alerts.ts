import type { DeliverySettings } from '../delivery/delivery-worker.ts';
import { DeliveryWorker } from '../delivery/delivery-worker.ts';
import { TargetGuard } from '../delivery/target-guard.ts';
import { Integrations } from '../domain/alerts/integrations.ts';
import { LookupAlerts } from '../domain/alerts/lookup-alerts.ts';
import { LookupService } from '../domain/lookups/lookup-service.ts';
import type { DisabledIntegration } from '../domain/alerts/outbox.ts';
import { SqlAlertOutbox } from '../store/repositories/alert-outbox.ts';
import { AlertOutboxWritesOnWriter } from '../store/writer/outbox-on-writer.ts';
import { SqlIntegrationsRepository } from '../store/repositories/integrations-repository.ts';
import { SqlLookupsRepository } from '../store/repositories/lookups-repository.ts';
import { TestAlertLimits, type TestAlertSettings } from '../limits/test-alert-allowance.ts';
import { limiterFactoryOf, type AuthAssembly } from './auth.ts';
import type { Foundation } from './foundation.ts';

/** How alerts are gathered, de-duplicated and delivered. */
export interface AlertSettings extends Omit<DeliverySettings, 'silentAfterMs' | 'silentCheckMs'> {
  /** One alert per subject and type within this window. */
  dedupWindowMs: number;
  /** How long `lookup.matched` alerts gather before they are written together. */
  lookupFlushMs: number;
  /** Request timeout of a webhook or Slack delivery. */
  timeoutMs: number;
  /** How many test alerts an owner may queue; tests lower it. */
  testAlerts?: TestAlertSettings;
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

/** Where an account's alerts go, and their way there (docs/api.md §12, docs/architecture.md "The path of an alert"). */
export interface AlertsAssembly {
  integrations: Integrations;
  /** `lookup.matched` alerts gathered off the answer's path; `flush()` writes them now (tests). */
  lookupAlerts: LookupAlerts;
  /** Works the alert outbox; started by the server once it listens (app.ts), stopped by close(). */
  alertWorker: DeliveryWorker;
}

export function assembleAlerts(base: Foundation, auth: Pick<AuthAssembly, 'accounts' | 'users'>, settings: Partial<AlertSettings> = {}): AlertsAssembly & { stop(): Promise<void> } {
  const { database, config, log, mailer, audit } = base;
  // Scores for first sightings, as the account's lookups answer them; no observer, so working
  // one out raises no lookup.matched of its own.
  const scores = new LookupService(new SqlLookupsRepository(base.reads.db, base.reads.statements), { scoring: config.scoring });
  const tellOwner = async (integration: DisabledIntegration) => {
    await audit.record({ action: 'integration.disabled', actor: 'service', accountId: integration.accountId, clientId: null, detail: { integration_id: integration.id, reason: integration.reason } });
    lookupAlerts.forget(integration.accountId);
    await auth.users.tellOwners(integration.accountId, {
      subject: `Tollwatch: alerts to "${integration.name}" are stopped`,
      text: [
        `Tollwatch disabled your ${integration.kind} integration "${integration.name}": ${integration.reason}.`,
        '',
        'No alerts are sent to it, or kept for it, until you enable it again (Settings → Integrations in the',
        `dashboard, or PATCH /api/integrations/${integration.id} with {"enabled": true}). Alerts that failed can be sent`,
        'again from its delivery log once the receiver is back.',
      ].join('\n'),
    });
  };
  const alertSettings: AlertSettings = { ...ALERT_DEFAULTS, ...settings };
  // On a SQLite file its writes go through intake's writer thread, as the TAXII publisher's do.
  const outbox = new SqlAlertOutbox(database.db, database.caps, base.sealer, base.writer && new AlertOutboxWritesOnWriter(base.writer));
  const guard = new TargetGuard(config.alerts.allowPrivateTargets);
  const lookupAlerts = new LookupAlerts(
    outbox,
    { flushMs: alertSettings.lookupFlushMs, maxBuffered: 1000, dedupWindowMs: alertSettings.dedupWindowMs },
    (err) => log?.warn({ err }, 'lookup.matched alerts not written'),
  );
  const integrations = new Integrations({
    repo: new SqlIntegrationsRepository(database.db, base.sealer),
    targets: guard,
    mailer,
    enqueue: async (alerts) => {
      await outbox.enqueueSubscribed(alerts);
    },
    testAlerts: new TestAlertLimits(limiterFactoryOf(base), settings.testAlerts),
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
    {
      numberScore: async (accountId, phoneNumber) => {
        const answer = await scores.phoneNumber(await auth.accounts.getAccount(accountId), phoneNumber);
        return answer.found ? { score: answer.score, reasons: answer.reasons } : undefined;
      },
      disabled: tellOwner,
    },
  );
  return {
    integrations,
    lookupAlerts,
    alertWorker,
    async stop() {
      await alertWorker.stop();
      await lookupAlerts.flush();
    },
  };
}

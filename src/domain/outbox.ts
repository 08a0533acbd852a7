import type { AlertOutbox, AnyAlertType } from './alerts.ts';
import type { IntegrationKind } from './integrations.ts';

/** An alert claimed for fan-out to its account's integrations. */
export interface ClaimedAlert {
  id: string;
  accountId: string;
  type: AnyAlertType;
  subject: string;
  createdAt: string;
  integrationId: string | null;
}

/** A delivery claimed for an attempt, with everything the attempt needs. */
export interface DueDelivery {
  id: string;
  attempts: number;
  /** When this delivery was made: retries go on for a day from then (a redelivery starts afresh). */
  createdAt: string;
  alert: { id: string; type: AnyAlertType; createdAt: string; data: Record<string, unknown> };
  /** Undefined when the integration was deleted since. */
  integration: { id: string; kind: IntegrationKind; target: string; secret: string | null } | undefined;
}

/** What one attempt came to. */
export interface AttemptRecord {
  at: string;
  durationMs: number;
  statusCode: number | null;
  error: string | null;
  outcome: 'delivered' | 'retrying' | 'failed';
  /** When the next attempt is due, for `retrying`. */
  nextAttemptAt?: string;
}

/** The outbox as the delivery worker sees it (src/store/alert-outbox.ts). */
export interface OutboxStore extends AlertOutbox {
  /** Leases up to `limit` new alerts until `leaseUntil`; rows another worker holds are skipped. */
  claimAlerts(limit: number, now: string, leaseUntil: string): Promise<ClaimedAlert[]>;
  /** Confirmed integrations of an account subscribed to a type (or the one a test names). */
  recipients(alert: ClaimedAlert): Promise<string[]>;
  /** Alerts of this account (and subject, when given) fanned out since `since`: the throttles' count. */
  recentAlerts(accountId: string, subject: string | undefined, since: string): Promise<number>;
  /** Writes one delivery per integration and closes the alert, in one transaction; `suppressed` writes none. */
  fanOut(alertId: string, integrationIds: string[], suppressed: boolean, now: string): Promise<void>;
  claimDeliveries(limit: number, now: string, leaseUntil: string): Promise<DueDelivery[]>;
  recordAttempt(delivery: DueDelivery, attempt: AttemptRecord): Promise<void>;
  /** Nodes of subscribed accounts whose newest event is older than `silentBefore` but not older than `since`. */
  silentNodes(since: string, silentBefore: string): Promise<Array<{ accountId: string; nodeId: string; lastSeen: string }>>;
  /** Removes closed alerts, finished deliveries and attempts older than `before`. */
  prune(before: string): Promise<void>;
}

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
  data: Record<string, unknown>;
}

/** A delivery claimed for an attempt, with everything the attempt needs. */
/** How one claim shares the worker's places between accounts. */
export interface DeliveryShare {
  perAccount: number;
  skip: readonly string[];
}

export interface DueDelivery {
  id: string;
  /** The account whose alert it is: deliveries take turns by account (docs/guarantees.md §10). */
  accountId: string;
  attempts: number;
  /** When this delivery was made: retries go on for a day from then (a redelivery starts afresh). */
  createdAt: string;
  alert: { id: string; type: AnyAlertType; createdAt: string; data: Record<string, unknown> };
  /**
   * Undefined when the integration was deleted since. `previousSecret`: a rotated-out webhook
   * secret still inside its overlap, which signs beside `secret`.
   */
  integration: { id: string; kind: IntegrationKind; target: string; secret: string | null; previousSecret: string | null } | undefined;
}

/** An integration the worker disabled after a day of failed deliveries, for its owner to be told. */
export interface DisabledIntegration {
  id: string;
  accountId: string;
  name: string;
  kind: IntegrationKind;
  reason: string;
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

/** The outbox as the delivery worker sees it (src/store/repositories/alert-outbox.ts). */
export interface OutboxStore extends AlertOutbox {
  /** Leases up to `limit` new alerts until `leaseUntil`; rows another worker holds are skipped. */
  claimAlerts(limit: number, now: string, leaseUntil: string): Promise<ClaimedAlert[]>;
  /**
   * Confirmed, enabled integrations of an account subscribed to a type (or the one a test
   * names); for an alert with a score, only those whose `min_score` it reaches.
   */
  recipients(alert: ClaimedAlert, score?: number): Promise<string[]>;
  /** Alerts of this account (and subject, when given) fanned out since `since`: the throttles' count. */
  recentAlerts(accountId: string, subject: string | undefined, since: string): Promise<number>;
  /**
   * Writes one delivery per integration and closes the alert, in one transaction; `suppressed`
   * writes none. `data`, when given, replaces the alert's (what fan-out learned: its score).
   */
  fanOut(alertId: string, integrationIds: string[], suppressed: boolean, now: string, data?: Record<string, unknown>): Promise<void>;
  /**
   * Disables an enabled integration none of whose attempts since `since` was delivered, with
   * `reason`: it, or undefined when it delivered something meanwhile (or is disabled already).
   */
  disableFailing(integrationId: string, since: string, reason: string, at: string): Promise<DisabledIntegration | undefined>;
  /**
   * Leases up to `limit` due deliveries, taking turns between accounts: every account's oldest
   * comes before anyone's second, at most `share.perAccount` of one account, none of the accounts
   * in `share.skip` (those that hold their share in the worker already).
   */
  claimDeliveries(limit: number, now: string, leaseUntil: string, share?: DeliveryShare): Promise<DueDelivery[]>;
  recordAttempt(delivery: DueDelivery, attempt: AttemptRecord): Promise<void>;
  /** Nodes of subscribed accounts whose newest event is older than `silentBefore` but not older than `since`. */
  silentNodes(since: string, silentBefore: string): Promise<Array<{ accountId: string; nodeId: string; lastSeen: string }>>;
  /** Removes closed alerts, finished deliveries and attempts older than `before`. */
  prune(before: string): Promise<void>;
}

/**
 * Alerts an account's integrations may subscribe to (docs/api.md §12). Each names a subject
 * (a number, an address, a node) so repeats can be told apart from news.
 */
export const ALERT_TYPES = ['lookup.matched', 'number.first_seen', 'node.silent'] as const;
export type AlertType = (typeof ALERT_TYPES)[number];

/** A delivery the owner asked for (`POST /api/integrations/{id}/test`): one integration, never de-duplicated. */
export const TEST_ALERT = 'integration.test';
export type AnyAlertType = AlertType | typeof TEST_ALERT;

export function isAlertType(value: unknown): value is AlertType {
  return typeof value === 'string' && (ALERT_TYPES as readonly string[]).includes(value);
}

/** An alert on its way into the outbox. */
export interface NewAlert {
  id: string;
  accountId: string;
  type: AnyAlertType;
  /** What it is about (`number:<key>`, `ip:<address>`, `node:<uuid>`): de-duplication and throttling count per subject. */
  subject: string;
  /** Repeats with the same key are not written (unique per account). */
  dedupKey: string;
  /** The payload's `data`: only what the account itself was told or submitted. */
  data: Record<string, unknown>;
  createdAt: string;
  /** Only to this integration (a test); to every subscribed and confirmed one when absent. */
  integrationId?: string;
}

/** What a receiver gets: the JSON body of a webhook, rendered as text for Slack and email. */
export interface AlertPayload {
  type: AnyAlertType;
  timestamp: string;
  data: Record<string, unknown>;
}

/**
 * One alert per subject and type within a window: the key names the window the instant falls
 * in, so a repeat inside it collides with the first on the outbox's unique key.
 */
export function windowedDedupKey(type: AlertType, subject: string, at: Date, windowMs: number): string {
  return `${type}|${subject}|${Math.floor(at.getTime() / windowMs)}`;
}

/** Where alerts are written: the outbox. */
export interface AlertOutbox {
  /**
   * Writes the alerts of accounts that have an integration subscribed to their type, skipping
   * any whose de-duplication key is taken; one or two statements however many alerts. Resolves
   * to the subscriptions found, as `account_id|type`, of the accounts the alerts named.
   */
  enqueueSubscribed(alerts: NewAlert[]): Promise<ReadonlySet<string>>;
}

/** The subject of a number's alerts, by its normalised key. */
export const numberSubject = (key: string) => `number:${key}`;

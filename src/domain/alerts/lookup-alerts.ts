import { randomUUID } from 'node:crypto';
import type { Account } from '../accounts/accounts.ts';
import { windowedDedupKey, type AlertOutbox, type NewAlert } from './alerts.ts';
import type { LookupObserver } from '../lookups/lookup-service.ts';

/** Buffers waiting for the store at most; matches beyond are dropped (and logged), lookups never wait. */
const MAX_BUFFERS_IN_FLIGHT = 8;
/**
 * How long an account known to have no `lookup.matched` integration is taken not to have one:
 * its lookups then cost nothing here. A change made on this instance is known at once
 * (`forget`); one made on another instance counts here within this time (docs/api.md §12).
 */
export const SUBSCRIPTION_MEMORY_MS = 5000;

export interface LookupAlertSettings {
  /** How long matches gather before they are written together. */
  flushMs: number;
  /** A buffer this full is written at once. */
  maxBuffered: number;
  /** One alert per subject within this window (AlertSettings.dedupWindowMs). */
  dedupWindowMs: number;
}

/**
 * `lookup.matched` alerts, gathered off the answer's path: a lookup only appends to a buffer,
 * which is written to the outbox every `flushMs` (or when full) in one or two statements for
 * every match in it. A lookup thus costs no store round trip of its own, and a match found
 * while the process dies in the next second is not alerted: the alert is advisory, the
 * lookup's answer is what counts (docs/guarantees.md).
 */
export class LookupAlerts implements LookupObserver {
  private readonly outbox: AlertOutbox;
  private readonly settings: LookupAlertSettings;
  private readonly onError: (err: unknown) => void;
  private buffer = new Map<string, NewAlert>();
  private timer: NodeJS.Timeout | undefined;
  private writing: Promise<void> = Promise.resolve();
  /** Buffers handed to the store and not yet written: bounded, so a stalled store cannot fill memory. */
  private inFlight = 0;
  /** Accounts found without a `lookup.matched` integration, until when that is taken as known. */
  private readonly unsubscribedUntil = new Map<string, number>();
  /** Counts `forget` calls: what a flush read before one may be out of date. */
  private changes = 0;
  private readonly now: () => number;

  constructor(outbox: AlertOutbox, settings: LookupAlertSettings, onError: (err: unknown) => void, now: () => number = Date.now) {
    this.outbox = outbox;
    this.settings = settings;
    this.onError = onError;
    this.now = now;
  }

  /** The account's integrations changed here: its next matches are gathered and checked again. */
  forget(accountId: string): void {
    this.changes += 1;
    this.unsubscribedUntil.delete(accountId);
  }

  matched(account: Account, match: { subject: string; lookup: 'phone_number' | 'ip_address'; answer: Record<string, unknown> }): void {
    // Most accounts have no such integration: their lookups stop here, with no alert built.
    const until = this.unsubscribedUntil.get(account.account_id);
    if (until !== undefined) {
      if (until > this.now()) return;
      this.unsubscribedUntil.delete(account.account_id);
    }
    const now = new Date();
    const dedupKey = windowedDedupKey('lookup.matched', match.subject, now, this.settings.dedupWindowMs);
    const key = `${account.account_id}|${dedupKey}`;
    // Repeats inside the window collapse here already; the outbox's unique key catches the rest.
    if (this.buffer.has(key)) return;
    // The answer was already sent; what goes out is that answer, less its human message.
    const { message: _message, found: _found, ...answer } = match.answer;
    this.buffer.set(key, {
      id: `msg_${randomUUID()}`,
      accountId: account.account_id,
      type: 'lookup.matched',
      subject: match.subject,
      dedupKey,
      data: { lookup: match.lookup, ...answer },
      createdAt: now.toISOString(),
    });
    if (this.buffer.size >= this.settings.maxBuffered) void this.flush();
    else this.timer ??= setTimeout(() => void this.flush(), this.settings.flushMs).unref();
  }

  /** Writes what has gathered; resolves once written (or the failure logged). */
  flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.buffer.size === 0) return this.writing;
    const alerts = [...this.buffer.values()];
    this.buffer = new Map();
    if (this.inFlight >= MAX_BUFFERS_IN_FLIGHT) {
      this.onError(new Error(`${alerts.length} lookup.matched alerts dropped: the store is not keeping up`));
      return this.writing;
    }
    this.inFlight += 1;
    this.writing = this.writing
      .then(async () => {
        const changes = this.changes;
        const subscribed = await this.outbox.enqueueSubscribed(alerts);
        // An integration made while the store was asked may be missing from its answer.
        if (changes !== this.changes) return;
        const until = this.now() + SUBSCRIPTION_MEMORY_MS;
        for (const { accountId } of alerts) {
          if (!subscribed.has(`${accountId}|lookup.matched`)) this.unsubscribedUntil.set(accountId, until);
        }
      })
      .catch(this.onError)
      .finally(() => {
        this.inFlight -= 1;
      });
    return this.writing;
  }
}

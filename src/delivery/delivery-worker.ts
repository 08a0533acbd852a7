import type { Logger } from 'pino';
import { TEST_ALERT, type NewAlert } from '../domain/alerts/alerts.ts';
import type { ClaimedAlert, DisabledIntegration, DueDelivery, OutboxStore } from '../domain/alerts/outbox.ts';
import { send, type Senders } from './senders.ts';

/** How the outbox is worked (docs/operations.md, "Alerts"); tests shorten the times. */
export interface DeliverySettings {
  /** How often the worker looks for work. */
  pollMs: number;
  /** Alerts fanned out, and deliveries attempted, per look. */
  batch: number;
  /** How long a claim holds a row; a worker that died holding one lets it go after this. */
  leaseMs: number;
  /** Attempts before a delivery is given up (`failed`), whatever `retryForMs` would allow. */
  maxAttempts: number;
  /** How long after it is made a delivery is still retried: a receiver down for hours still gets it. */
  retryForMs: number;
  /** The first retry's delay; each later one doubles it, up to `retryMaxMs`, with jitter. */
  retryBaseMs: number;
  retryMaxMs: number;
  /** At most this many alerts per subject (a number, an address, a node) within `throttleWindowMs`; the rest are suppressed. */
  throttlePerSubject: number;
  throttleWindowMs: number;
  /** At most this many alerts per account within an hour, whatever their subjects (an import of a year of events, say); the rest are suppressed. */
  throttlePerAccountHour: number;
  /** A node with no event for this long is silent. */
  silentAfterMs: number;
  /** How often silence is checked. */
  silentCheckMs: number;
  /** Nodes quiet for longer than this beyond `silentAfterMs` are forgotten, not alerted. */
  silentLookbackMs: number;
  /** Closed alerts and the delivery log are kept this long. */
  retentionMs: number;
}

const PRUNE_EVERY_MS = 3600_000;

/** What the worker asks of the rest of the service. */
export interface DeliveryHooks {
  /**
   * A number's score and reasons as the account's lookups would answer now, for a
   * `number.first_seen` alert: its integrations' `min_score` is judged on it, and its text states it.
   */
  numberScore?(accountId: string, phoneNumber: string): Promise<{ score: number; reasons: string[] } | undefined>;
  /** An integration was disabled after a day of failed deliveries: its owner is told. */
  disabled?(integration: DisabledIntegration): Promise<void>;
}

/**
 * Attempts to one receiver at a time: at most two of one account's, four in all. A receiver that
 * takes its whole timeout on each of many due deliveries holds four of the worker's places, never
 * all of them; and one account's backlog to a receiver every account shares (`hooks.slack.com`)
 * leaves the others' attempts their own places there.
 */
const PER_RECEIVER = 4;
const PER_RECEIVER_ACCOUNT = 2;

/**
 * Deliveries one account may hold in the worker (under way, or waiting for their receiver):
 * claims skip an account holding this many, so one account's flood of due deliveries never takes
 * the places another's first delivery needs.
 */
const PER_ACCOUNT = 5;

/** Who answers a delivery: the host and port of a webhook or Slack URL; the SMTP server for mail. */
function receiverOf(delivery: DueDelivery): string | undefined {
  const integration = delivery.integration;
  if (!integration) return undefined;
  if (integration.kind === 'email') return 'smtp';
  try {
    return new URL(integration.target).host;
  } catch {
    return integration.target;
  }
}

/** The key of one account's places at one receiver. */
function placeOf(receiver: string, accountId: string): string {
  return `${receiver}\n${accountId}`;
}

/**
 * Works the outbox (docs/guarantees.md, "Alerts"): fans new alerts out to the subscribed,
 * confirmed integrations (suppressing a subject's alerts beyond its throttle), attempts due
 * deliveries and records every attempt, retrying with exponential backoff and jitter until
 * `maxAttempts`, and writes `node.silent` alerts. One per serving process; rows are leased,
 * so several processes on one store never attempt the same delivery at once, and a lease
 * left by a process that died runs out and the row is taken again: at least once.
 */
export class DeliveryWorker {
  private readonly outbox: OutboxStore;
  private readonly senders: Senders;
  private readonly settings: DeliverySettings;
  private readonly log: Logger | undefined;
  private readonly hooks: DeliveryHooks;
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  private current: Promise<void> = Promise.resolve();
  /** Attempts under way: a pass starts them and goes on, so a slow receiver holds only its own. */
  private readonly inFlight = new Set<Promise<void>>();
  /** Attempts under way per receiver (`receiverOf`), and per receiver and account. */
  private readonly busy = new Counts();
  private readonly busyByAccount = new Counts();
  /** Claimed deliveries waiting for a place at their receiver, oldest first. */
  private readonly waiting = new Map<string, DueDelivery[]>();
  private waitingCount = 0;
  /** Deliveries each account holds here, under way or waiting (PER_ACCOUNT). */
  private readonly held = new Counts();
  private lastSilentCheck = 0;
  private lastPrune = 0;

  constructor(outbox: OutboxStore, senders: Senders, settings: DeliverySettings, log?: Logger, hooks: DeliveryHooks = {}) {
    this.outbox = outbox;
    this.senders = senders;
    this.settings = settings;
    this.log = log;
    this.hooks = hooks;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.schedule(0);
  }

  /** Stops looking for work and waits for the attempts in progress, whose outcomes are recorded. */
  async stop(): Promise<void> {
    this.running = false;
    clearTimeout(this.timer);
    await this.current;
    await this.settled();
  }

  /** Resolves once every attempt started so far has been recorded. */
  async settled(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.all(this.inFlight);
  }

  /** One pass over the outbox; what the timer runs. */
  async tick(now = new Date()): Promise<void> {
    await this.fanOut(now);
    await this.deliver(now);
    if (now.getTime() - this.lastSilentCheck >= this.settings.silentCheckMs) {
      this.lastSilentCheck = now.getTime();
      await this.checkSilentNodes(now);
    }
    if (now.getTime() - this.lastPrune >= PRUNE_EVERY_MS) {
      this.lastPrune = now.getTime();
      await this.outbox.prune(new Date(now.getTime() - this.settings.retentionMs).toISOString());
    }
  }

  private schedule(delayMs: number): void {
    this.timer = setTimeout(() => {
      this.current = this.tick()
        .catch((err) => this.log?.warn({ err }, 'alert delivery pass failed'))
        .finally(() => {
          if (this.running) this.schedule(this.settings.pollMs);
        });
    }, delayMs);
    this.timer.unref();
  }

  private async fanOut(now: Date): Promise<void> {
    const alerts = await this.outbox.claimAlerts(this.settings.batch, now.toISOString(), this.leaseEnd(now));
    for (const alert of alerts) {
      const suppressed = alert.type !== TEST_ALERT && (await this.throttled(alert, now));
      const scored = suppressed ? undefined : await this.scoreOf(alert);
      const recipients = suppressed ? [] : await this.outbox.recipients(alert, scored?.score);
      await this.outbox.fanOut(alert.id, recipients, suppressed, now.toISOString(), scored?.data);
    }
  }

  /**
   * The score an alert is judged on against each integration's `min_score`: a lookup's answer
   * carries it; a first sighting's is worked out now (as the account's lookup would answer) and
   * written into the alert, with its reasons. Undefined for alerts without one.
   */
  private async scoreOf(alert: ClaimedAlert): Promise<{ score: number; data?: Record<string, unknown> } | undefined> {
    if (alert.type === 'lookup.matched') return typeof alert.data.score === 'number' ? { score: alert.data.score } : undefined;
    if (alert.type !== 'number.first_seen' || !this.hooks.numberScore) return undefined;
    const found = await this.hooks.numberScore(alert.accountId, String(alert.data.phone_number));
    // Gone since (a retention run): nothing left to score, so nothing to tell.
    if (!found) return { score: 0 };
    return { score: found.score, data: { ...alert.data, score: found.score, reasons: found.reasons } };
  }

  private async throttled(alert: ClaimedAlert, now: Date): Promise<boolean> {
    const since = new Date(now.getTime() - this.settings.throttleWindowMs).toISOString();
    if ((await this.outbox.recentAlerts(alert.accountId, alert.subject, since)) >= this.settings.throttlePerSubject) return true;
    const hourAgo = new Date(now.getTime() - 3600_000).toISOString();
    return (await this.outbox.recentAlerts(alert.accountId, undefined, hourAgo)) >= this.settings.throttlePerAccountHour;
  }

  /**
   * Claims as many due deliveries as there is room for (`batch` in flight at most), taking turns
   * between accounts, and starts their attempts without waiting for them: one receiver that
   * takes its whole timeout holds its own attempts, never the next pass, nor anyone else's due
   * retries.
   */
  private async deliver(now: Date): Promise<void> {
    const room = this.settings.batch - this.inFlight.size - this.waitingCount;
    if (room <= 0) return;
    const share = { perAccount: PER_ACCOUNT, skip: this.held.keysAtLeast(PER_ACCOUNT) };
    const due = await this.outbox.claimDeliveries(room, now.toISOString(), this.leaseEnd(now), share);
    for (const delivery of due) {
      this.held.add(delivery.accountId, 1);
      this.begin(delivery);
    }
  }

  /**
   * Starts an attempt, or queues it until its receiver has a place for its account
   * (PER_RECEIVER, PER_RECEIVER_ACCOUNT). A queued one starts as an attempt to that receiver
   * ends: within `batch / PER_RECEIVER_ACCOUNT` timeouts, well inside the claim's lease.
   */
  private begin(delivery: DueDelivery): void {
    const receiver = receiverOf(delivery);
    if (receiver !== undefined && !this.hasPlace(receiver, delivery.accountId)) {
      this.waiting.set(receiver, [...(this.waiting.get(receiver) ?? []), delivery]);
      this.waitingCount += 1;
      return;
    }
    const place = receiver === undefined ? undefined : placeOf(receiver, delivery.accountId);
    if (receiver !== undefined && place !== undefined) {
      this.busy.add(receiver, 1);
      this.busyByAccount.add(place, 1);
    }
    const attempt: Promise<void> = this.attempt(delivery)
      .catch((err: unknown) => this.log?.warn({ err, delivery: delivery.id }, 'alert delivery attempt not recorded'))
      .finally(() => {
        this.inFlight.delete(attempt);
        this.held.add(delivery.accountId, -1);
        if (receiver === undefined || place === undefined) return;
        this.busy.add(receiver, -1);
        this.busyByAccount.add(place, -1);
        const next = this.nextWaiting(receiver);
        if (next) this.begin(next);
      });
    this.inFlight.add(attempt);
  }

  private hasPlace(receiver: string, accountId: string): boolean {
    return this.busy.of(receiver) < PER_RECEIVER && this.busyByAccount.of(placeOf(receiver, accountId)) < PER_RECEIVER_ACCOUNT;
  }

  /**
   * Takes the waiting delivery to start next at `receiver`: of the accounts with a place there,
   * the one with the fewest attempts under way, oldest first among equals. So accounts take
   * turns at a receiver they share, however many one of them queued.
   */
  private nextWaiting(receiver: string): DueDelivery | undefined {
    const queue = this.waiting.get(receiver);
    if (!queue) return undefined;
    let chosen = -1;
    for (let i = 0; i < queue.length; i++) {
      const accountId = queue[i]!.accountId;
      if (!this.hasPlace(receiver, accountId)) continue;
      if (chosen < 0 || this.busyByAccount.of(placeOf(receiver, accountId)) < this.busyByAccount.of(placeOf(receiver, queue[chosen]!.accountId))) chosen = i;
    }
    if (chosen < 0) return undefined;
    const [next] = queue.splice(chosen, 1);
    if (queue.length === 0) this.waiting.delete(receiver);
    this.waitingCount -= 1;
    return next;
  }

  private async attempt(delivery: DueDelivery): Promise<void> {
    const at = new Date();
    if (!delivery.integration) {
      await this.outbox.recordAttempt(delivery, { at: at.toISOString(), durationMs: 0, statusCode: null, error: 'the integration was deleted', outcome: 'failed' });
      return;
    }
    const started = performance.now();
    let statusCode: number | null = null;
    let error: string | null = null;
    let retryAfterMs: number | undefined;
    try {
      const result = await send(this.senders, delivery, at);
      statusCode = result.statusCode;
      retryAfterMs = result.retryAfterMs;
      if (!result.ok) error = `answered ${result.statusCode}`;
    } catch (err) {
      // The owner reads this in the delivery log: the cause, never a stack.
      error = (err instanceof Error ? err.message : String(err)).split('\n')[0]!.slice(0, 500);
    }
    const durationMs = Math.round(performance.now() - started);
    const attempts = delivery.attempts + 1;
    // A receiver's Retry-After is honoured, up to the longest pause of the schedule: a later one
    // would skip attempts the day of retries promises.
    const next = Date.now() + Math.max(this.backoff(attempts), Math.min(retryAfterMs ?? 0, this.settings.retryMaxMs));
    const dayOver = next > Date.parse(delivery.createdAt) + this.settings.retryForMs;
    const givenUp = attempts >= this.settings.maxAttempts || dayOver;
    const outcome = error === null ? 'delivered' : givenUp ? 'failed' : 'retrying';
    const nextAttemptAt = outcome === 'retrying' ? new Date(next).toISOString() : undefined;
    await this.outbox.recordAttempt(delivery, { at: at.toISOString(), durationMs, statusCode, error, outcome, ...(nextAttemptAt ? { nextAttemptAt } : {}) });
    if (outcome !== 'delivered') this.log?.info({ delivery: delivery.id, attempts, statusCode, error, outcome }, 'alert delivery attempt failed');
    // Only a delivery that failed for its whole day says the receiver is gone; one cut short by
    // the attempt cap does not.
    if (outcome === 'failed' && dayOver) await this.disableIfFailing(delivery.integration.id, at, error ?? 'failed');
  }

  /**
   * A delivery given up after its day of retries disables its integration when nothing else it
   * was sent in that day arrived either (docs/api.md §12): alerts stop piling up for a receiver
   * that is gone, and its owner is told, instead of learning from a delivery log nobody reads.
   */
  private async disableIfFailing(integrationId: string, at: Date, lastError: string): Promise<void> {
    const since = new Date(at.getTime() - this.settings.retryForMs).toISOString();
    const hours = Math.round(this.settings.retryForMs / 3600_000);
    const span = hours >= 1 ? `${hours} hour${hours === 1 ? '' : 's'}` : `${Math.round(this.settings.retryForMs / 1000)} seconds`;
    const reason = `no delivery succeeded for ${span}; the last attempt: ${lastError}`;
    const disabled = await this.outbox.disableFailing(integrationId, since, reason, at.toISOString());
    if (!disabled) return;
    this.log?.warn({ integration: disabled.id, account: disabled.accountId }, 'integration disabled after a day of failed deliveries');
    await this.hooks.disabled?.(disabled).catch((err: unknown) => this.log?.warn({ err, integration: disabled.id }, 'the owner of a disabled integration could not be told'));
  }

  /** Exponential, capped, with "equal jitter": half the delay fixed, half random, so retries of many deliveries spread out. */
  private backoff(attempts: number): number {
    const delay = Math.min(this.settings.retryMaxMs, this.settings.retryBaseMs * 2 ** (attempts - 1));
    return delay / 2 + Math.random() * (delay / 2);
  }

  private async checkSilentNodes(now: Date): Promise<void> {
    const silentBefore = new Date(now.getTime() - this.settings.silentAfterMs);
    const since = new Date(silentBefore.getTime() - this.settings.silentLookbackMs);
    const silent = await this.outbox.silentNodes(since.toISOString(), silentBefore.toISOString());
    const alerts: NewAlert[] = silent.map(({ accountId, nodeId, lastSeen }) => ({
      id: `msg_${crypto.randomUUID()}`,
      accountId,
      type: 'node.silent',
      subject: `node:${nodeId}`,
      // One alert per silence: the same node, quiet since the same event, is the same news.
      dedupKey: `node.silent|node:${nodeId}|${lastSeen}`,
      data: { node_id: nodeId, last_seen: lastSeen, silent_after_minutes: Math.round(this.settings.silentAfterMs / 60_000) },
      createdAt: now.toISOString(),
    }));
    await this.outbox.enqueueSubscribed(alerts);
  }

  private leaseEnd(now: Date): string {
    return new Date(now.getTime() + this.settings.leaseMs).toISOString();
  }
}

/** Counts by key, with no entry kept at zero. */
class Counts {
  private readonly counts = new Map<string, number>();

  of(key: string): number {
    return this.counts.get(key) ?? 0;
  }

  add(key: string, by: number): void {
    const value = this.of(key) + by;
    if (value > 0) this.counts.set(key, value);
    else this.counts.delete(key);
  }

  keysAtLeast(bound: number): string[] {
    return [...this.counts].filter(([, n]) => n >= bound).map(([key]) => key);
  }
}

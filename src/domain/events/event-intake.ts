import type { Account } from '../accounts/accounts.ts';
import { ServiceError } from '../errors.ts';
import type { EventsRepository, IngestOutcome } from './events.ts';
import type { FieldError } from '../field-error.ts';
import { validateHoneypotEvent, type HoneypotEvent } from './honeypot-event.ts';
import type { PlanCatalog } from '../accounts/plans.ts';
import { writeScopeOf } from '../visibility.ts';

/** What became of one item of a batch, in the batch's order. */
export type BatchItemOutcome =
  | { index: number; event_uuid: string; status: 'created' | 'replayed' | 'conflict' }
  | { index: number; event_uuid: string | null; status: 'invalid'; errors: FieldError[] };

/** Most events one batch may carry. */
export const MAX_BATCH = 1000;

/** A batch item that could not even be read as JSON (an NDJSON line), and why. */
export class UnreadableItem {
  /** Says what is wrong with the item, e.g. "is not valid JSON". */
  readonly message: string;

  constructor(message: string) {
    this.message = message;
  }
}

/** What submitting one event did. */
export interface Submitted {
  outcome: Exclude<IngestOutcome, 'conflict'>;
  eventUuid: string;
}

/** Event submission (docs/api.md §5): plan, validation, idempotent storage. */
export class EventIntake {
  private readonly repo: EventsRepository;
  private readonly plans: PlanCatalog;

  constructor(repo: EventsRepository, plans: PlanCatalog) {
    this.repo = repo;
    this.plans = plans;
  }

  /**
   * Refuses accounts whose plan may not submit. The HTTP routes ask before reading a body;
   * submit and submitBatch ask again, so the rule holds for any caller.
   */
  async assertMaySubmit(account: Account): Promise<void> {
    if (!(await this.plans.find(account.plan))?.maySubmit) {
      throw new ServiceError('plan_not_allowed', `the ${account.plan} plan may not submit events; submission needs the Contributor Plan`);
    }
  }

  /** Validates and stores one event; resolves only once the store has committed it. */
  async submit(account: Account, body: unknown, now = new Date()): Promise<Submitted> {
    await this.assertMaySubmit(account);
    const event = this.validate(body, now);
    const [outcome] = await this.repo.ingest({ accountId: account.account_id, scope: writeScopeOf(account) }, [event]);
    if (outcome === 'conflict') {
      throw new ServiceError('duplicate_event', 'an event with this event_uuid was already submitted with different content');
    }
    return { outcome: outcome ?? 'created', eventUuid: event.event_uuid };
  }

  /**
   * Validates each item on its own and stores every valid one in one transaction, answering
   * only after it commits. Items are independent: a bad item does not stop the others.
   */
  async submitBatch(account: Account, items: unknown[], now = new Date()): Promise<BatchItemOutcome[]> {
    await this.assertMaySubmit(account);
    if (items.length === 0) throw new ServiceError('validation_failed', 'a batch holds at least one event');
    if (items.length > MAX_BATCH) throw new ServiceError('payload_too_large', `a batch holds at most ${MAX_BATCH} events`);
    const outcomes: BatchItemOutcome[] = [];
    const valid: Array<{ index: number; event: HoneypotEvent }> = [];
    items.forEach((item, index) => {
      if (item instanceof UnreadableItem) {
        outcomes[index] = { index, event_uuid: null, status: 'invalid', errors: [{ field: '(body)', message: item.message }] };
        return;
      }
      const result = validateHoneypotEvent(item, now);
      if (result.ok) valid.push({ index, event: result.event });
      else outcomes[index] = { index, event_uuid: uuidOf(item), status: 'invalid', errors: result.errors };
    });
    if (valid.length > 0) {
      const stored = await this.repo.ingest(
        { accountId: account.account_id, scope: writeScopeOf(account) },
        valid.map((v) => v.event),
      );
      valid.forEach(({ index, event }, i) => {
        outcomes[index] = { index, event_uuid: event.event_uuid, status: stored[i] ?? 'created' };
      });
    }
    return outcomes;
  }

  private validate(body: unknown, now: Date): HoneypotEvent {
    const result = validateHoneypotEvent(body, now);
    if (!result.ok) {
      const fields = result.errors.map((e) => e.field).join(', ');
      throw new ServiceError('validation_failed', `the event has invalid fields: ${fields}`, result.errors);
    }
    return result.event;
  }
}

/** The uuid an invalid item claimed, when it is a string worth echoing. */
export function uuidOf(item: unknown): string | null {
  const uuid = (item as { event_uuid?: unknown } | null)?.event_uuid;
  return typeof uuid === 'string' && uuid.length <= 64 ? uuid : null;
}

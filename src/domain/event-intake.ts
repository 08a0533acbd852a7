import type { Account } from './accounts.ts';
import { ServiceError } from './errors.ts';
import type { EventsRepository, IngestOutcome } from './events.ts';
import { validateHoneypotEvent, type HoneypotEvent } from './honeypot-event.ts';
import type { PlanCatalog } from './plans.ts';
import { writeScopeOf } from './visibility.ts';

/** What submitting one event did. */
export interface Submitted {
  outcome: Exclude<IngestOutcome, 'conflict'>;
  eventUuid: string;
}

/** Event submission (CONTRACT §5): plan, validation, idempotent storage. */
export class EventIntake {
  private readonly repo: EventsRepository;
  private readonly plans: PlanCatalog;

  constructor(repo: EventsRepository, plans: PlanCatalog) {
    this.repo = repo;
    this.plans = plans;
  }

  /** Refuses accounts whose plan may not submit. */
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

  private validate(body: unknown, now: Date): HoneypotEvent {
    const result = validateHoneypotEvent(body, now);
    if (!result.ok) {
      const fields = result.errors.map((e) => e.field).join(', ');
      throw new ServiceError('validation_failed', `the event has invalid fields: ${fields}`, result.errors);
    }
    return result.event;
  }
}

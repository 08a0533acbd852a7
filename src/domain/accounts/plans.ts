import { NO_AUDIT, type AuditTrail } from './audit.ts';
import { ServiceError } from '../errors.ts';

/** A rate window: at most `limit` requests per `windowSeconds`. */
export interface RateWindow {
  limit: number;
  windowSeconds: number;
}

/** What an account on a plan may do (docs/api.md §9). */
export interface Plan {
  name: string;
  maySubmit: boolean;
  /** Phone and IP lookups together. */
  lookups: RateWindow;
  /** Event submissions; null where the plan may not submit. */
  submissions: RateWindow | null;
  /** Most API clients an account may hold; null for no limit. */
  maxClients: number | null;
  /** Reads of the account's own events (list pages and single events): a page may be 1,000 events. */
  eventReads: RateWindow;
}

/** The plan every account gets unless the operator says otherwise, and a new plan's starting point. */
export const TESTER_PLAN: Readonly<Plan> = {
  name: 'tester',
  maySubmit: false,
  lookups: { limit: 5, windowSeconds: 3600 },
  submissions: null,
  maxClients: 1,
  eventReads: { limit: 60, windowSeconds: 3600 },
};

/** The plans a new store starts with. */
export const DEFAULT_PLANS: readonly Plan[] = [
  TESTER_PLAN,
  {
    name: 'contributor',
    maySubmit: true,
    lookups: { limit: 3600, windowSeconds: 3600 },
    submissions: { limit: 100_000, windowSeconds: 3600 },
    maxClients: 25,
    eventReads: { limit: 3600, windowSeconds: 3600 },
  },
  {
    name: 'business',
    maySubmit: false,
    lookups: { limit: 25, windowSeconds: 60 },
    submissions: null,
    maxClients: 10,
    eventReads: { limit: 60, windowSeconds: 60 },
  },
  {
    name: 'service_provider',
    maySubmit: false,
    lookups: { limit: 25, windowSeconds: 1 },
    submissions: null,
    maxClients: null,
    eventReads: { limit: 60, windowSeconds: 60 },
  },
  {
    // A Kamailio call guard's account (docs/call-guard.md): two lookups a call, 500 calls a second.
    name: 'call_guard',
    maySubmit: false,
    lookups: { limit: 1000, windowSeconds: 1 },
    submissions: null,
    maxClients: null,
    eventReads: { limit: 60, windowSeconds: 60 },
  },
];

/** A plan as JSON shows it outside the code (the CLI's `--json`, the audit log): snake_case, as every JSON of Tollwatch. */
export function planJson(plan: Plan) {
  const windowJson = (w: RateWindow) => ({ limit: w.limit, window_seconds: w.windowSeconds });
  return {
    name: plan.name,
    may_submit: plan.maySubmit,
    lookups: windowJson(plan.lookups),
    submissions: plan.submissions ? windowJson(plan.submissions) : null,
    max_clients: plan.maxClients,
    event_reads: windowJson(plan.eventReads),
  };
}

/** Finds a plan by name in a plan table. */
export function findPlan(plans: readonly Plan[], name: string): Plan | undefined {
  return plans.find((p) => p.name === name);
}

/** What an operator may change in a plan: any of its limits, each left as it is when absent. */
export type PlanChanges = Partial<Omit<Plan, 'name'>>;

/** Where plans are kept. */
export interface PlansRepository {
  list(): Promise<Plan[]>;
  save(plan: Plan): Promise<void>;
}

/** What a plan catalog is told about the world around it. */
export interface PlanCatalogOptions {
  /** Changes whenever another process commits, where the store can tell. */
  externalChangeCounter?: () => number;
  /** Runs after this catalog changed a plan, e.g. to tell other instances. */
  onSaved?: () => void;
  /** Where plan changes are recorded. */
  audit?: AuditTrail;
}

/**
 * The plan table, read from the store and kept for `ttlMs` (or until another process commits,
 * where the store can tell), so that an operator's change reaches every instance quickly
 * without a read per request.
 */
export class PlanCatalog {
  private readonly repo: PlansRepository;
  private readonly ttlMs: number;
  private readonly externalChangeCounter: (() => number) | undefined;
  private readonly onSaved: () => void;
  private readonly audit: AuditTrail;
  private plans: Plan[] | undefined;
  private loadedAt = 0;
  private lastCounter: number | undefined;

  constructor(repo: PlansRepository, ttlMs: number, options: PlanCatalogOptions = {}) {
    this.repo = repo;
    this.ttlMs = ttlMs;
    this.externalChangeCounter = options.externalChangeCounter;
    this.onSaved = options.onSaved ?? (() => {});
    this.audit = options.audit ?? NO_AUDIT;
  }

  /** Every plan. */
  async all(): Promise<Plan[]> {
    const counter = this.externalChangeCounter?.();
    if (!this.plans || Date.now() - this.loadedAt >= this.ttlMs || counter !== this.lastCounter) {
      this.plans = await this.repo.list();
      this.loadedAt = Date.now();
      this.lastCounter = counter;
    }
    return this.plans;
  }

  /** A plan by name. */
  async find(name: string): Promise<Plan | undefined> {
    return findPlan(await this.all(), name);
  }

  /**
   * A plan by name when the kept table is still good, without a promise: what every request's
   * allowance needs. Undefined when the table must be read again (then `find`), or has no such plan.
   */
  loaded(name: string): Plan | undefined {
    if (!this.plans || Date.now() - this.loadedAt >= this.ttlMs || this.externalChangeCounter?.() !== this.lastCounter) return undefined;
    return findPlan(this.plans, name);
  }

  /** Forgets the loaded table, after a change made here or announced by another instance. */
  clear(): void {
    this.plans = undefined;
  }

  /** Creates or replaces a plan after checking it makes sense, and records who did. */
  async save(plan: Plan, actor = 'operator'): Promise<void> {
    const problems = planProblems(plan);
    if (problems.length > 0) throw new ServiceError('validation_failed', problems.join('; '));
    await this.repo.save(plan);
    this.plans = undefined;
    this.onSaved();
    await this.audit.record({ action: 'plan.saved', actor, detail: { plan: planJson(plan) } });
  }

  /** Applies changes to a plan, or to the tester plan's limits under a new name, and saves it. */
  async change(name: string, changes: PlanChanges, actor = 'operator'): Promise<Plan> {
    const current = (await this.find(name)) ?? { ...TESTER_PLAN, name };
    // Field by field: a change given as undefined leaves the limit as it is; null is a value.
    const plan: Plan = {
      name,
      maySubmit: changes.maySubmit ?? current.maySubmit,
      lookups: changes.lookups ?? current.lookups,
      submissions: changes.submissions !== undefined ? changes.submissions : current.submissions,
      maxClients: changes.maxClients !== undefined ? changes.maxClients : current.maxClients,
      eventReads: changes.eventReads ?? current.eventReads,
    };
    await this.save(plan, actor);
    return plan;
  }
}

function planProblems(plan: Plan): string[] {
  const problems: string[] = [];
  const positive = (n: number) => Number.isSafeInteger(n) && n > 0;
  if (!/^[a-z][a-z0-9_-]{0,39}$/.test(plan.name)) problems.push('a plan name is lower-case letters, digits, _ and -');
  if (!positive(plan.lookups.limit) || !positive(plan.lookups.windowSeconds)) problems.push('lookups need a positive limit and window');
  if (!positive(plan.eventReads.limit) || !positive(plan.eventReads.windowSeconds)) problems.push('event reads need a positive limit and window');
  if (plan.submissions && (!positive(plan.submissions.limit) || !positive(plan.submissions.windowSeconds))) {
    problems.push('submissions need a positive limit and window');
  }
  if (plan.maySubmit && !plan.submissions) problems.push('a plan that may submit needs a submission limit');
  if (plan.maxClients !== null && !positive(plan.maxClients)) problems.push('max clients must be positive or unlimited');
  return problems;
}

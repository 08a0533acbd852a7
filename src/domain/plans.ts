/** A rate window: at most `limit` requests per `windowSeconds`. */
export interface RateWindow {
  limit: number;
  windowSeconds: number;
}

/** What an account on a plan may do (CONTRACT §9). */
export interface Plan {
  name: string;
  maySubmit: boolean;
  /** Phone and IP lookups together. */
  lookups: RateWindow;
  /** Event submissions; null where the plan may not submit. */
  submissions: RateWindow | null;
  /** Most API clients an account may hold; null for no limit. */
  maxClients: number | null;
}

/** The plan every account gets unless the operator says otherwise. */
export const DEFAULT_PLANS: readonly Plan[] = [
  { name: 'tester', maySubmit: false, lookups: { limit: 5, windowSeconds: 3600 }, submissions: null, maxClients: 1 },
  {
    name: 'contributor',
    maySubmit: true,
    lookups: { limit: 3600, windowSeconds: 3600 },
    submissions: { limit: 100_000, windowSeconds: 3600 },
    maxClients: 25,
  },
  { name: 'business', maySubmit: false, lookups: { limit: 25, windowSeconds: 60 }, submissions: null, maxClients: 10 },
  { name: 'service_provider', maySubmit: false, lookups: { limit: 25, windowSeconds: 1 }, submissions: null, maxClients: null },
];

/** Finds a plan by name in a plan table. */
export function findPlan(plans: readonly Plan[], name: string): Plan | undefined {
  return plans.find((p) => p.name === name);
}

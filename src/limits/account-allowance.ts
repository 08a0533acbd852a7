import type { Account } from '../domain/accounts/accounts.ts';
import type { PlanCatalog } from '../domain/accounts/plans.ts';
import { allowanceRefusal, type LimitGroup, type PlanLimiter } from './plan-limiter.ts';

/** What spending came to, for a caller that answers a refusal in its own shape. */
export type AllowanceSpent = { allowed: true } | { allowed: false; refusal: string; retryAfterSeconds: number };

/**
 * Spends `cost` of an account's allowance for `group` under its plan as it stands now. Allowed
 * when the plan grants no such allowance (or is gone): the caller's route refuses that on its
 * own terms.
 */
export type SpendAllowance = (group: LimitGroup, account: Account, cost?: number) => Promise<AllowanceSpent>;

/** For callers that hold an account, not its plan (the dashboard's lookups), over the limiter every path spends from. */
export function accountAllowance(limiter: PlanLimiter, plans: Pick<PlanCatalog, 'find'>): SpendAllowance {
  return async (group, account, cost = 1) => {
    const plan = await plans.find(account.plan);
    const spent = plan && limiter.spend(group, plan, account.account_id, cost);
    if (!plan || !spent) return { allowed: true };
    const state = await spent.state;
    return state.allowed ? { allowed: true } : { allowed: false, refusal: allowanceRefusal(plan, group, spent.window, state), retryAfterSeconds: state.resetSeconds };
  };
}

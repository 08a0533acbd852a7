import type { RateLimiterAbstract, RateLimiterRes } from 'rate-limiter-flexible';
import type { TestAlertAllowance } from '../domain/alerts/integrations.ts';
import { spend } from './failure-throttle.ts';
import type { LimiterFactory } from './plan-limiter.ts';

/**
 * How many test alerts an owner may queue (docs/api.md §12): each is delivered like any other,
 * retried for a day, and shares its receiver's places with every account sending there, so a
 * flood of them from one account would delay another's real alerts (docs/guarantees.md §10).
 * Enough to try a receiver again and again while setting it up; too few to flood one.
 */
export interface TestAlertSettings {
  perIntegration: { points: number; windowSeconds: number };
  perAccount: { points: number; windowSeconds: number };
}

export const DEFAULT_TEST_ALERTS: TestAlertSettings = {
  perIntegration: { points: 5, windowSeconds: 600 },
  perAccount: { points: 20, windowSeconds: 3600 },
};

/** Counts test alerts per integration and per account, shared between instances like the sign-in locks. */
export class TestAlertLimits implements TestAlertAllowance {
  private readonly integration: RateLimiterAbstract;
  private readonly account: RateLimiterAbstract;
  private readonly settings: TestAlertSettings;

  constructor(factory: LimiterFactory, settings: TestAlertSettings = DEFAULT_TEST_ALERTS) {
    this.settings = settings;
    this.integration = factory({ keyPrefix: 'tollwatch:test-alerts:integration', points: settings.perIntegration.points, duration: settings.perIntegration.windowSeconds });
    this.account = factory({ keyPrefix: 'tollwatch:test-alerts:account', points: settings.perAccount.points, duration: settings.perAccount.windowSeconds });
  }

  /** Spends one test alert of the integration and of the account; one the account refuses gives the integration its point back. */
  async spend(accountId: string, integrationId: string): Promise<number | undefined> {
    const byIntegration = await spend(this.integration, integrationId);
    if (byIntegration.consumedPoints > this.settings.perIntegration.points) return waitOf(byIntegration);
    const byAccount = await spend(this.account, accountId);
    if (byAccount.consumedPoints <= this.settings.perAccount.points) return undefined;
    await this.integration.reward(integrationId, 1);
    return waitOf(byAccount);
  }
}

function waitOf(res: RateLimiterRes): number {
  return Math.max(1, Math.ceil(res.msBeforeNext / 1000));
}

import { ContributorRequests } from '../domain/accounts/contributor-requests.ts';
import { ContributorsBoard } from '../domain/accounts/contributors-board.ts';
import { SignUps } from '../domain/accounts/sign-ups.ts';
import { SignUpRequests } from '../limits/sign-up-requests.ts';
import { SqlBoardRepository, SqlContributorRequestsRepository } from '../store/repositories/community-repository.ts';
import { SqlSignUpsRepository } from '../store/repositories/sign-ups-repository.ts';
import { limiterFactoryOf, type AuthAssembly } from './auth.ts';
import type { Foundation } from './foundation.ts';

/** Running Tollwatch as a community service: open sign-up, contributor requests, the contributors' board. */
export interface CommunityAssembly {
  /** Sign-ups waiting for their mailed link (TOLLWATCH_SIGN_UP=open). */
  signUps: SignUps;
  /** Bounds sign-up mails, per address asked for and per network asking. */
  signUpRequests: SignUpRequests;
  contributorRequests: ContributorRequests;
  contributorsBoard: ContributorsBoard;
}

/** Refuses to start when the sign-up plan is no plan: every confirmed sign-up would fail. */
export async function assembleCommunity(base: Foundation, auth: Pick<AuthAssembly, 'accounts' | 'users'>): Promise<CommunityAssembly> {
  const { config, database, audit, mailer } = base;
  const plan = config.dashboard.signUpPlan;
  if (!(await base.plans.find(plan))) throw new Error(`TOLLWATCH_SIGN_UP_PLAN: there is no plan "${plan}" (see \`tollwatch plans list\`)`);
  return {
    signUps: new SignUps({ repo: new SqlSignUpsRepository(database.db), users: auth.users, mailer, publicUrl: config.publicUrl, plan }),
    signUpRequests: new SignUpRequests(limiterFactoryOf(base)),
    contributorRequests: new ContributorRequests({
      repo: new SqlContributorRequestsRepository(database.db),
      accounts: auth.accounts,
      users: auth.users,
      mailer,
      audit,
      approval: config.dashboard.contributorApproval,
      publicUrl: config.publicUrl,
      mailFailed: (err) => base.log?.warn({ err }, 'a contributor request’s mail could not be sent'),
    }),
    contributorsBoard: new ContributorsBoard({ repo: new SqlBoardRepository(database.db), accounts: auth.accounts, audit }),
  };
}

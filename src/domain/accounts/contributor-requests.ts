import { randomUUID } from 'node:crypto';
import { ServiceError } from '../errors.ts';
import type { Mailer } from '../alerts/integrations.ts';
import type { AccountsService } from './accounts.ts';
import { NO_AUDIT, type AuditTrail } from './audit.ts';
import type { User, UsersService } from './users.ts';

/**
 * Becoming a contributor (docs/dashboard.md, "Becoming a contributor"): an account's owner asks
 * for the contributor plan, saying what honeypots they run; the operator approves (the account
 * moves to the plan) or declines with a reason. One open request per account. Operators are
 * mailed of each new request, the account's owners of the decision.
 */

export const CONTRIBUTOR_PLAN = 'contributor';
export type ContributorRequestStatus = 'open' | 'approved' | 'declined';
/** Longest description of the honeypots, and longest reason for declining. */
export const MAX_HONEYPOTS_TEXT = 2000;
export const MAX_DECLINE_REASON = 1000;

export interface ContributorRequest {
  request_id: string;
  account_id: string;
  /** The owner who asked. */
  user_id: string;
  honeypots: string;
  status: ContributorRequestStatus;
  reason: string | null;
  created_at: string;
  decided_at: string | null;
  /** `operator` (CLI), `user:<id>` (the operator pages) or `automatic`. */
  decided_by: string | null;
}

/** Where requests are kept. */
export interface ContributorRequestsRepository {
  /** Stores an open request; false if the account has one open already. */
  insert(request: ContributorRequest): Promise<boolean>;
  find(requestId: string): Promise<ContributorRequest | undefined>;
  /** An account's newest request. */
  latestOf(accountId: string): Promise<ContributorRequest | undefined>;
  /** Requests in this state (every state when absent), oldest first. */
  list(status?: ContributorRequestStatus): Promise<ContributorRequest[]>;
  /** Decides an open request; false if it is no longer open (decided by someone else meanwhile). */
  decide(requestId: string, decision: { status: 'approved' | 'declined'; reason: string | null; at: string; by: string }): Promise<boolean>;
}

export interface ContributorRequestsOptions {
  repo: ContributorRequestsRepository;
  accounts: Pick<AccountsService, 'getAccount' | 'setPlan'>;
  users: Pick<UsersService, 'list' | 'tellOwners'>;
  mailer: Mailer;
  audit?: AuditTrail;
  /** TOLLWATCH_CONTRIBUTOR_APPROVAL: `automatic` approves a request as it is made. */
  approval: 'manual' | 'automatic';
  /** Links in the operators' mail. */
  publicUrl: string;
  /** Where a mail that failed is told; the request or decision stands without it. */
  mailFailed?: (err: unknown) => void;
  now?: () => Date;
}

export class ContributorRequests {
  private readonly options: ContributorRequestsOptions;
  private readonly audit: AuditTrail;
  private readonly now: () => Date;

  constructor(options: ContributorRequestsOptions) {
    this.options = options;
    this.audit = options.audit ?? NO_AUDIT;
    this.now = options.now ?? (() => new Date());
  }

  /** An owner asks for the contributor plan for their account. */
  async request(owner: User, honeypotsText: string, ip: string | null = null): Promise<ContributorRequest> {
    if (owner.role !== 'owner' || owner.account_id === null) throw new ServiceError('not_found', 'only an account’s owner may ask');
    const honeypots = honeypotsText.trim();
    if (honeypots.length === 0 || honeypots.length > MAX_HONEYPOTS_TEXT || /[\u0000-\u0008\u000b\u000c\u000e-\u001f]/.test(honeypots)) {
      throw new ServiceError('validation_failed', `say what honeypots you run, in 1 to ${MAX_HONEYPOTS_TEXT} characters`, [{ field: 'honeypots', message: `must be 1 to ${MAX_HONEYPOTS_TEXT} characters` }]);
    }
    const account = await this.options.accounts.getAccount(owner.account_id);
    if (account.plan === CONTRIBUTOR_PLAN) throw new ServiceError('validation_failed', 'this account is on the contributor plan already', [{ field: 'honeypots', message: 'the account is a contributor already' }]);
    const request: ContributorRequest = { request_id: randomUUID(), account_id: account.account_id, user_id: owner.user_id, honeypots, status: 'open', reason: null, created_at: this.now().toISOString(), decided_at: null, decided_by: null };
    if (!(await this.options.repo.insert(request))) {
      throw new ServiceError('validation_failed', 'this account has a request open already; the operator decides it first', [{ field: 'honeypots', message: 'a request is open already' }]);
    }
    await this.audit.record({ action: 'contributor.requested', actor: `user:${owner.user_id}`, accountId: account.account_id, ip, detail: { request_id: request.request_id } });
    if (this.options.approval === 'automatic') return this.approve(request.request_id, 'automatic');
    await this.tellOperators(request, account.name);
    return request;
  }

  /** Approves an open request: the account moves to the contributor plan, its owners are told. */
  async approve(requestId: string, actor = 'operator'): Promise<ContributorRequest> {
    // The plan first: a plan that cannot be given (the operator removed it) leaves the request open.
    const open = await this.openRequest(requestId);
    // Audited by the accounts service as `account.plan_changed` too.
    await this.options.accounts.setPlan(open.account_id, CONTRIBUTOR_PLAN, actor);
    const request = await this.decide(requestId, 'approved', null, actor);
    await this.audit.record({ action: 'contributor.approved', actor, accountId: request.account_id, detail: { request_id: requestId } });
    await this.mailSafely(() =>
      this.options.users.tellOwners(request.account_id, {
        subject: 'Tollwatch: you are a contributor',
        text: `Your request for the contributor plan is approved: the account is on it now, and its nodes may submit events.\nCreate a client with write:events under API clients at ${this.options.publicUrl}/settings/clients.`,
      }),
    );
    return request;
  }

  /** Declines an open request with a reason the owners are told; the plan stays as it is. */
  async decline(requestId: string, reasonText: string, actor = 'operator'): Promise<ContributorRequest> {
    const reason = reasonText.trim();
    if (reason.length === 0 || reason.length > MAX_DECLINE_REASON) {
      throw new ServiceError('validation_failed', `give a reason of 1 to ${MAX_DECLINE_REASON} characters`, [{ field: 'reason', message: `must be 1 to ${MAX_DECLINE_REASON} characters` }]);
    }
    const request = await this.decide(requestId, 'declined', reason, actor);
    await this.audit.record({ action: 'contributor.declined', actor, accountId: request.account_id, detail: { request_id: requestId, reason } });
    await this.mailSafely(() =>
      this.options.users.tellOwners(request.account_id, {
        subject: 'Tollwatch: your request for the contributor plan is declined',
        text: `Your request for the contributor plan is declined; the account keeps its plan.\n\nThe operator's reason:\n${reason}\n\nYou may ask again from the account page.`,
      }),
    );
    return request;
  }

  list(status?: ContributorRequestStatus): Promise<ContributorRequest[]> {
    return this.options.repo.list(status);
  }

  latestOf(accountId: string): Promise<ContributorRequest | undefined> {
    return this.options.repo.latestOf(accountId);
  }

  private async openRequest(requestId: string): Promise<ContributorRequest> {
    const found = await this.options.repo.find(requestId);
    if (!found) throw new ServiceError('not_found', 'no such request');
    if (found.status !== 'open') throw decidedAlready(found.status);
    return found;
  }

  private async decide(requestId: string, status: 'approved' | 'declined', reason: string | null, by: string): Promise<ContributorRequest> {
    const found = await this.openRequest(requestId);
    const at = this.now().toISOString();
    // Two operators at once: the store lets exactly one decide.
    if (!(await this.options.repo.decide(requestId, { status, reason, at, by }))) throw decidedAlready('decided');
    return { ...found, status, reason, decided_at: at, decided_by: by };
  }

  private async tellOperators(request: ContributorRequest, accountName: string): Promise<void> {
    const { mailer } = this.options;
    if (!mailer.configured) return;
    const operators = (await this.options.users.list(null)).filter((u) => !u.disabled);
    for (const operator of operators) {
      await this.mailSafely(() =>
        mailer.send({
          to: operator.email,
          subject: 'Tollwatch: a request for the contributor plan',
          text: [
            `The account "${accountName}" (${request.account_id}) asks for the contributor plan. Their honeypots, in their words:`,
            '',
            request.honeypots,
            '',
            `Approve or decline it at ${this.options.publicUrl}/operator/contributors, or with \`tollwatch contributors approve|decline ${request.request_id}\`.`,
          ].join('\n'),
        }),
      );
    }
  }

  private async mailSafely(send: () => Promise<unknown>): Promise<void> {
    try {
      await send();
    } catch (err) {
      this.options.mailFailed?.(err);
    }
  }
}

function decidedAlready(state: string): ServiceError {
  return new ServiceError('validation_failed', `this request is ${state} already`, [{ field: 'request_id', message: 'is decided already' }]);
}

import { randomUUID } from 'node:crypto';
import { NO_AUDIT, type AuditAction, type AuditTrail } from './audit.ts';
import type { ClientActivity } from './client-activity.ts';
import { ServiceError } from '../errors.ts';
import { defaultPermissions, isPermission, PERMISSIONS, type Permission } from './permissions.ts';
import type { Plan, PlanCatalog } from './plans.ts';
import { hashSecret, newClientId, newClientSecret } from './secrets.ts';

export interface Account {
  account_id: string;
  name: string;
  plan: string;
  /** Trusted accounts' events form the shared data set (docs/api.md §6). */
  trusted: boolean;
  disabled: boolean;
  created_at: string;
}

export interface Client {
  client_id: string;
  account_id: string;
  name: string;
  permissions: Permission[];
  secret_hash: string;
  /**
   * The version tokens carry as `ver` and revocation compares: raised by a secret reset and by
   * disabling the account, never lowered, so a token refused once is refused for good.
   */
  secret_version: number;
  created_at: string;
  /**
   * Its last uses, as the store holds them (domain/accounts/client-activity.ts: up to a flush late):
   * when a token was last issued to it and from which address, and when and from where it last
   * called the API. Null or absent if never.
   */
  last_used_at?: string | null;
  last_token_address?: string | null;
  last_call_at?: string | null;
  last_call_address?: string | null;
}

/** Where accounts and clients are kept. */
export interface AccountsRepository {
  insertAccount(account: Account): Promise<void>;
  findAccount(accountId: string): Promise<Account | undefined>;
  listAccounts(): Promise<Account[]>;
  updateAccount(accountId: string, patch: Partial<Pick<Account, 'plan' | 'trusted'>>): Promise<boolean>;
  /**
   * Sets the disabled flag. Disabling also raises the version of every client of the account in
   * the same transaction, so no token issued before it verifies again after a later enable.
   */
  setDisabled(accountId: string, disabled: boolean): Promise<boolean>;
  insertClient(client: Client): Promise<void>;
  findClient(clientId: string): Promise<Client | undefined>;
  listClients(accountId: string): Promise<Client[]>;
  countClients(accountId: string): Promise<number>;
  /** Stores a new secret hash and bumps the version; the new version, or undefined if no such client. */
  replaceSecret(clientId: string, secretHash: string): Promise<number | undefined>;
  deleteClient(clientId: string): Promise<boolean>;
}

/** A client as shown to its owner: never the secret or its hash. */
export interface ClientView {
  client_id: string;
  account_id: string;
  name: string;
  permissions: Permission[];
  created_at: string;
  /** When a token was last issued to it, and the address it was asked for from; null if never (or not told). */
  last_used_at: string | null;
  last_token_address: string | null;
  /** When it last called the API, and from which address; null if never. */
  last_call_at: string | null;
  last_call_address: string | null;
}

/** A client together with its secret, which exists only in this answer. */
export interface IssuedCredentials extends ClientView {
  client_secret: string;
}

/** Account and client management: used by the operator CLI and the HTTP layer alike. */
export class AccountsService {
  private readonly repo: AccountsRepository;
  private readonly plans: PlanCatalog;
  private readonly audit: AuditTrail;
  private readonly onAccessChanged: () => void;
  private readonly activity: Pick<ClientActivity, 'tokenIssued'>;

  /** `onAccessChanged` runs after any change to who may do what, so caches can forget. */
  constructor(repo: AccountsRepository, plans: PlanCatalog, activity: Pick<ClientActivity, 'tokenIssued'>, audit: AuditTrail = NO_AUDIT, onAccessChanged: () => void = () => {}) {
    this.repo = repo;
    this.plans = plans;
    this.activity = activity;
    this.audit = audit;
    this.onAccessChanged = onAccessChanged;
  }

  /** Creates an account on a known plan. */
  async createAccount(input: { name: string; plan: string; trusted?: boolean }, actor = 'operator'): Promise<Account> {
    const name = validName(input.name);
    await this.requirePlan(input.plan);
    const account: Account = {
      account_id: randomUUID(),
      name,
      plan: input.plan,
      trusted: input.trusted ?? false,
      disabled: false,
      created_at: new Date().toISOString(),
    };
    await this.repo.insertAccount(account);
    await this.record('account.created', actor, account.account_id, null, { plan: account.plan, trusted: account.trusted });
    return account;
  }

  listAccounts(): Promise<Account[]> {
    return this.repo.listAccounts();
  }

  /** The account, or a `not_found` error. */
  async getAccount(accountId: string): Promise<Account> {
    const account = await this.repo.findAccount(accountId);
    if (!account) throw new ServiceError('not_found', 'no such account');
    return account;
  }

  async setPlan(accountId: string, plan: string, actor = 'operator'): Promise<Account> {
    await this.requirePlan(plan);
    const before = await this.getAccount(accountId);
    const after = await this.update(accountId, { plan });
    await this.record('account.plan_changed', actor, accountId, null, { from: before.plan, to: plan });
    return after;
  }

  /**
   * Disables or enables an account. Disabling revokes every token issued before it for good:
   * enabling again lets the clients' secrets get new tokens, never revives the old ones.
   */
  async setDisabled(accountId: string, disabled: boolean, actor = 'operator'): Promise<Account> {
    if (!(await this.repo.setDisabled(accountId, disabled))) throw new ServiceError('not_found', 'no such account');
    this.onAccessChanged();
    const after = await this.getAccount(accountId);
    await this.record(disabled ? 'account.disabled' : 'account.enabled', actor, accountId, null);
    return after;
  }

  /** Whether the account's future events join the shared data set; past events stay where they are. */
  async setTrusted(accountId: string, trusted: boolean, actor = 'operator'): Promise<Account> {
    const after = await this.update(accountId, { trusted });
    await this.record('account.trust_changed', actor, accountId, null, { trusted });
    return after;
  }

  /** Creates a client; the secret is returned here once and never again. */
  async createClient(input: { accountId: string; name: string; permissions?: string[] }, actor = 'operator'): Promise<IssuedCredentials> {
    const account = await this.getAccount(input.accountId);
    const plan = await this.requirePlan(account.plan);
    const name = validName(input.name);
    const permissions = input.permissions ? this.parsePermissions(input.permissions) : defaultPermissions(plan.maySubmit);
    if (plan.maxClients !== null && (await this.repo.countClients(account.account_id)) >= plan.maxClients) {
      throw new ServiceError('limit_reached', `the ${plan.name} plan allows at most ${plan.maxClients} clients`);
    }
    const secret = newClientSecret();
    const client: Client = {
      client_id: newClientId(),
      account_id: account.account_id,
      name,
      permissions,
      secret_hash: hashSecret(secret),
      secret_version: 1,
      created_at: new Date().toISOString(),
    };
    await this.repo.insertClient(client);
    await this.record('client.created', actor, account.account_id, client.client_id, { permissions });
    return { ...viewOf(client), client_secret: secret };
  }

  async listClients(accountId: string): Promise<ClientView[]> {
    await this.getAccount(accountId);
    return (await this.repo.listClients(accountId)).map(viewOf);
  }

  /**
   * One client of an account, or `not_found`, also when the id names another account's client:
   * whoever acts for an account (the dashboard) may act on its clients only, and learns nothing
   * of others'.
   */
  async clientOf(accountId: string, clientId: string): Promise<ClientView> {
    const client = await this.repo.findClient(clientId);
    if (!client || client.account_id !== accountId) throw new ServiceError('not_found', 'no such client');
    return viewOf(client);
  }

  /** Replaces a client's secret; every token issued under the old one stops working. */
  async resetSecret(clientId: string, actor = 'operator'): Promise<{ client_id: string; client_secret: string }> {
    const secret = newClientSecret();
    const version = await this.repo.replaceSecret(clientId, hashSecret(secret));
    if (version === undefined) throw new ServiceError('not_found', 'no such client');
    this.onAccessChanged();
    const client = await this.repo.findClient(clientId);
    await this.record('client.secret_reset', actor, client?.account_id ?? null, clientId, { secret_version: version });
    return { client_id: clientId, client_secret: secret };
  }

  /**
   * A client and its account, read from the store, not a cache: for the token endpoint, where a
   * secret reset on another instance must bite at once. Undefined when either is missing.
   */
  async credentialsOf(clientId: string): Promise<{ client: Client; account: Account } | undefined> {
    const client = await this.repo.findClient(clientId);
    const account = client && (await this.repo.findAccount(client.account_id));
    return client && account ? { client, account } : undefined;
  }

  /**
   * Notes that a token was issued to the client, asked for from `address` (the dashboard's
   * "last used"): in memory, written with the next flush of the clients' activity, so a burst
   * of grants costs no write each.
   */
  async recordClientUse(clientId: string, address?: string): Promise<void> {
    this.activity.tokenIssued(clientId, address ?? null);
  }

  /** Deletes a client; its tokens stop working at once. */
  async deleteClient(clientId: string, actor = 'operator'): Promise<void> {
    const client = await this.repo.findClient(clientId);
    if (!client || !(await this.repo.deleteClient(clientId))) throw new ServiceError('not_found', 'no such client');
    this.onAccessChanged();
    await this.record('client.deleted', actor, client.account_id, clientId);
  }

  private async update(accountId: string, patch: Partial<Pick<Account, 'plan' | 'trusted'>>): Promise<Account> {
    if (!(await this.repo.updateAccount(accountId, patch))) throw new ServiceError('not_found', 'no such account');
    this.onAccessChanged();
    return this.getAccount(accountId);
  }

  private record(action: AuditAction, actor: string, accountId: string | null, clientId: string | null, detail?: Record<string, unknown>) {
    return this.audit.record({ action, actor, accountId, clientId, ...(detail ? { detail } : {}) });
  }

  private async requirePlan(name: string): Promise<Plan> {
    const plan = await this.plans.find(name);
    if (!plan) {
      const known = (await this.plans.all()).map((p) => p.name).join(', ');
      throw new ServiceError('validation_failed', `unknown plan ${JSON.stringify(name)}; known plans: ${known}`, [
        { field: 'plan', message: `must be one of: ${known}` },
      ]);
    }
    return plan;
  }

  private parsePermissions(values: string[]): Permission[] {
    const bad = values.filter((v) => !isPermission(v));
    if (bad.length > 0 || values.length === 0) {
      throw new ServiceError('validation_failed', `unknown permissions: ${bad.join(', ') || '(none given)'}`, [
        { field: 'permissions', message: `must be one or more of ${PERMISSIONS.join(', ')}` },
      ]);
    }
    return [...new Set(values)] as Permission[];
  }
}

/** A trimmed account, client or ingest URL name: 1 to 200 printable characters. */
export function validName(raw: string): string {
  const name = raw.trim();
  if (name.length === 0 || name.length > 200 || /[\u0000-\u001f]/.test(name)) {
    throw new ServiceError('validation_failed', 'name must be 1 to 200 printable characters', [
      { field: 'name', message: 'must be 1 to 200 printable characters' },
    ]);
  }
  return name;
}

function viewOf(client: Client): ClientView {
  return {
    client_id: client.client_id,
    account_id: client.account_id,
    name: client.name,
    permissions: client.permissions,
    created_at: client.created_at,
    last_used_at: client.last_used_at ?? null,
    last_token_address: client.last_token_address ?? null,
    last_call_at: client.last_call_at ?? null,
    last_call_address: client.last_call_address ?? null,
  };
}

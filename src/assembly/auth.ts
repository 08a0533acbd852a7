import cluster from 'node:cluster';
import { AccountsService } from '../domain/accounts/accounts.ts';
import { CLIENT_USE_FLUSH_MS, ClientActivity } from '../domain/accounts/client-activity.ts';
import { PendingSignIns } from '../domain/accounts/pending-sign-ins.ts';
import { Sessions } from '../domain/accounts/sessions.ts';
import { TwoFactor } from '../domain/accounts/two-factor.ts';
import { UsersService } from '../domain/accounts/users.ts';
import { allowanceMail, AllowanceWatch } from '../limits/allowance-watch.ts';
import { DEFAULT_THROTTLE, FailureThrottle, type ThrottleSettings } from '../limits/failure-throttle.ts';
import { accountAllowance, type SpendAllowance } from '../limits/account-allowance.ts';
import { clusterLimiters, memoryLimiters, PlanLimiter, type LimiterFactory } from '../limits/plan-limiter.ts';
import { ResetRequests } from '../limits/reset-requests.ts';
import { DEFAULT_SIGN_IN_LOCKS, SignInLocks, type SignInLockSettings } from '../limits/sign-in-locks.ts';
import { AccessTokens } from '../oauth/access-tokens.ts';
import { ApiAuthenticator } from '../oauth/api-authenticator.ts';
import { CredentialsCache } from '../oauth/credentials-cache.ts';
import { SigningKeys } from '../oauth/signing-keys.ts';
import { SqlAccountsRepository } from '../store/repositories/accounts-repository.ts';
import { SqlClientActivityRepository } from '../store/repositories/client-activity-repository.ts';
import { SqlSigningKeys } from '../store/repositories/signing-keys-repository.ts';
import { ClientActivityOnWriter } from '../store/writer/writes-on-writer.ts';
import { SqlUsersRepository } from '../store/repositories/users-repository.ts';
import { SqlTwoFactorRepository } from '../store/repositories/two-factor-repository.ts';
import type { Foundation } from './foundation.ts';

/**
 * How long a cached client may be trusted before it is read again: the revocation bound of last
 * resort, for a change whose notice did not arrive (Redis or the listening connection away).
 */
const CREDENTIALS_TTL_MS = 1000;

/** Who may call, and how much: accounts and their clients, tokens, dashboard users and sessions, allowances and throttles. */
export interface AuthAssembly {
  accounts: AccountsService;
  /** Each client's last token grant and API call, noted in memory and flushed (`flush()`: now, for tests). */
  clientActivity: ClientActivity;
  tokens: AccessTokens;
  /** The keys tokens are signed and verified with (tests sign genuine tokens with them). */
  signingKeys: SigningKeys;
  authenticator: ApiAuthenticator;
  credentials: CredentialsCache;
  /** Spends plan allowances (lookups, submissions, event reads). */
  limiter: PlanLimiter;
  /** The same, for a caller holding an account rather than its plan (the dashboard). */
  spendAllowance: SpendAllowance;
  authFailures: FailureThrottle;
  /** Bounds password guessing at the dashboard's sign-in, per email and per address. */
  signInLocks: SignInLocks;
  /** Bounds "forgot your password" mails, per email and per address. */
  resetRequests: ResetRequests;
  /** Dashboard users and their one-time links (docs/dashboard.md). */
  users: UsersService;
  /** Dashboard sessions, kept in the store. */
  sessions: Sessions;
  /** Two-factor sign-in: enrolments, codes, recovery codes, accounts' requirement (docs/dashboard.md). */
  twoFactor: TwoFactor;
  /** Sign-ins whose password was right, awaiting their second step. */
  pendingSignIns: PendingSignIns;
  /** Bounds wrong second-step codes as signInLocks bounds passwords: per user and per address. */
  secondStepLocks: SignInLocks;
}

export interface AuthOptions {
  /** How failed authentications are slowed and refused. */
  throttle?: Partial<ThrottleSettings>;
  /** How many password guesses sign-in allows (DEFAULT_SIGN_IN_LOCKS); tests lower them. */
  signInLocks?: Partial<SignInLockSettings>;
  /** How long signing keys are used before the store is read again (KEYS_RELOAD_MS); tests shorten it. */
  keysReloadMs?: number;
  /** How long a cached client is trusted (CREDENTIALS_TTL_MS); tests lengthen it to show notices, not the bound, at work. */
  credentialsTtlMs?: number;
  /** Access-token lifetime in seconds instead of TOLLWATCH_TOKEN_TTL; tests go below its 60-second floor to see renewals. */
  tokenTtlSeconds?: number;
  /** How long clients' uses gather before they are written (CLIENT_USE_FLUSH_MS); tests that flush themselves lengthen it. */
  clientUseFlushMs?: number;
  /** The clock two-factor codes' time steps are read from; tests set it to compute codes without racing a step's end. */
  twoFactorClock?: () => Date;
}

/** Counters shared with whoever shares the work: Redis's, the cluster primary's, or this process's. */
export function limiterFactoryOf(base: Pick<Foundation, 'redis'>): LimiterFactory {
  return base.redis ? base.redis.limiters() : cluster.isWorker ? clusterLimiters : memoryLimiters;
}

export async function assembleAuth(base: Foundation, options: AuthOptions): Promise<AuthAssembly> {
  const { config, database, plans, audit } = base;
  const accountsRepo = new SqlAccountsRepository(database.db);
  const credentials = new CredentialsCache(accountsRepo, options.credentialsTtlMs ?? CREDENTIALS_TTL_MS, database.externalChangeCounter);
  // A rotation is announced like an access change: every instance then signs with the new key
  // from its next token, instead of at its next reload (KEYS_RELOAD_MS).
  const keys = await SigningKeys.open(new SqlSigningKeys(database.db), base.sealer, { reloadMs: options.keysReloadMs, onRotated: base.announce, audit });
  const forget = () => {
    credentials.clear();
    plans.clear();
    keys.markStale();
  };
  await base.onAccessChange(forget);
  // On a SQLite file the flush goes through intake's writer thread, as the alert outbox's writes do.
  const clientUses = base.writer ? new ClientActivityOnWriter(base.writer) : new SqlClientActivityRepository(database.db);
  const clientActivity = new ClientActivity(clientUses, options.clientUseFlushMs ?? CLIENT_USE_FLUSH_MS, (err) =>
    base.log?.warn({ err }, "clients' last use not written; kept for the next flush"),
  );
  const accounts = new AccountsService(accountsRepo, plans, clientActivity, audit, () => {
    forget();
    base.announce();
  });
  const limiters = limiterFactoryOf(base);
  // Allowances running low or out: counted, and the account's owners told (at most hourly).
  const allowances = new AllowanceWatch({
    // AllowanceWatch says nothing of the reports' allowance, which is no plan's.
    counted: (notice) => notice.group !== 'reports' && base.metrics.allowanceNotice(notice.group, notice.level),
    told: (notice) => {
      base.log?.warn({ account: notice.accountId, group: notice.group, level: notice.level, plan: notice.plan.name }, `an account's ${notice.group} allowance is ${notice.level === 'spent' ? 'spent' : 'running low'}`);
      users.tellOwners(notice.accountId, allowanceMail(notice)).catch((err: unknown) => base.log?.warn({ err }, 'the owners of an account whose allowance ran low could not be told'));
    },
  });
  // Alone, allowances are counted in memory; shared counters only where others share them.
  const limiter = new PlanLimiter(base.redis || cluster.isWorker ? limiters : undefined, allowances);
  const tokens = new AccessTokens(keys, { issuer: config.issuer, audiences: config.audiences, ttlSeconds: options.tokenTtlSeconds ?? config.tokenTtlSeconds });
  const usersRepo = new SqlUsersRepository(database.db);
  const sessions = new Sessions(usersRepo, { idleSeconds: config.dashboard.sessionIdleSeconds, absoluteSeconds: config.dashboard.sessionMaxSeconds }, undefined, base.sealer);
  const users = new UsersService({ repo: usersRepo, accounts, audit, endSessions: (userId) => sessions.endAll(userId), publicUrl: config.publicUrl, mailer: base.mailer });
  const twoFactorRepo = new SqlTwoFactorRepository(database.db, base.sealer);
  const pendingSignIns = new PendingSignIns(twoFactorRepo);
  const twoFactor = new TwoFactor({
    repo: twoFactorRepo,
    audit,
    endSessions: (userId) => sessions.endAll(userId),
    endPendingSignIns: (userId) => pendingSignIns.endAll(userId),
    mailer: base.mailer,
    // No port: a colon in the issuer would split the label apps read.
    issuer: `Tollwatch (${new URL(config.publicUrl).hostname})`,
    now: options.twoFactorClock,
  });
  const signInLockSettings = { ...DEFAULT_SIGN_IN_LOCKS, perAddress: { ...DEFAULT_SIGN_IN_LOCKS.perAddress, short: config.authThrottle.perAddress }, ...options.signInLocks };
  return {
    accounts,
    clientActivity,
    tokens,
    signingKeys: keys,
    authenticator: new ApiAuthenticator(tokens, credentials),
    credentials,
    limiter,
    spendAllowance: accountAllowance(limiter, plans),
    authFailures: new FailureThrottle(limiters, { ...DEFAULT_THROTTLE, ...config.authThrottle, ...options.throttle }),
    signInLocks: new SignInLocks(limiters, signInLockSettings),
    secondStepLocks: new SignInLocks(limiters, signInLockSettings, 'tollwatch:second-step'),
    resetRequests: new ResetRequests(limiters),
    users,
    sessions,
    twoFactor,
    pendingSignIns,
  };
}

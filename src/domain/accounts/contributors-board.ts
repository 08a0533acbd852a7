import { ServiceError } from '../errors.ts';
import type { Account } from './accounts.ts';
import { NO_AUDIT, type AuditTrail } from './audit.ts';
import type { User } from './users.ts';

/**
 * The contributors' board (docs/dashboard.md, "The contributors' board"): the trusted accounts,
 * whose events form the shared data set, ranked by their events and distinct numbers over the
 * last 30 days. An account is named only by the public alias its owner chose; every trusted
 * account without one is summed into a single "others" line, never named.
 */

export const BOARD_DAYS = 30;
/** How long a computed board is shown before it is counted again. */
export const BOARD_TTL_MS = 60_000;

/**
 * An alias: 3 to 32 letters, digits, spaces, dots, hyphens and underscores, starting and ending
 * with a letter or digit. Unique without regard to case; "others" is the board's own word.
 */
const ALIAS = /^[\p{L}\p{N}][\p{L}\p{N} ._-]{1,30}[\p{L}\p{N}]$/u;
const RESERVED = new Set(['others', 'other']);

export interface AccountCounts {
  account_id: string;
  events: number;
  numbers: number;
}

export interface BoardRepository {
  /** Sets an account's alias; false if another account holds the same `aliasKey`. */
  setAlias(accountId: string, alias: string, aliasKey: string, at: string): Promise<boolean>;
  removeAlias(accountId: string): Promise<boolean>;
  aliasOf(accountId: string): Promise<string | undefined>;
  /** Every alias, by account. */
  aliases(): Promise<Map<string, string>>;
  /** Each of these accounts' events and distinct numbers since `since` (event time); accounts with none left out. */
  countsByAccount(accountIds: readonly string[], since: string): Promise<AccountCounts[]>;
  /** The distinct numbers of these accounts' events together since `since`. */
  distinctNumbers(accountIds: readonly string[], since: string): Promise<number>;
}

export interface BoardLine {
  rank: number;
  alias: string;
  events: number;
  numbers: number;
}

export interface Board {
  /** The window's start. */
  since: string;
  lines: BoardLine[];
  /** Trusted accounts that chose no alias, summed; null when there are none with events. */
  others: { accounts: number; events: number; numbers: number } | null;
  computed_at: string;
}

export interface ContributorsBoardOptions {
  repo: BoardRepository;
  accounts: { listAccounts(): Promise<Account[]> };
  audit?: AuditTrail;
  ttlMs?: number;
  now?: () => Date;
}

export class ContributorsBoard {
  private readonly options: ContributorsBoardOptions;
  private readonly audit: AuditTrail;
  private readonly now: () => Date;
  private kept: { board: Promise<Board>; until: number } | undefined;

  constructor(options: ContributorsBoardOptions) {
    this.options = options;
    this.audit = options.audit ?? NO_AUDIT;
    this.now = options.now ?? (() => new Date());
  }

  /** The board, counted at most once a minute however many read it. */
  board(): Promise<Board> {
    const now = this.now().getTime();
    if (!this.kept || this.kept.until <= now) {
      const board = this.compute();
      this.kept = { board, until: now + (this.options.ttlMs ?? BOARD_TTL_MS) };
      board.catch(() => (this.kept = undefined));
    }
    return this.kept.board;
  }

  aliasOf(accountId: string): Promise<string | undefined> {
    return this.options.repo.aliasOf(accountId);
  }

  /** An owner puts their account on the board under `alias`, or renames it there. */
  async join(owner: User, aliasText: string): Promise<string> {
    const accountId = ownAccount(owner);
    const alias = aliasText.trim().replace(/\s+/g, ' ');
    if (!ALIAS.test(alias) || RESERVED.has(alias.toLowerCase())) {
      throw new ServiceError('validation_failed', 'an alias is 3 to 32 letters, digits, spaces, dots, hyphens or underscores, starting and ending with a letter or digit', [
        { field: 'alias', message: 'must be 3 to 32 letters, digits, spaces, dots, hyphens or underscores, starting and ending with a letter or digit' },
      ]);
    }
    if (!(await this.options.repo.setAlias(accountId, alias, alias.toLowerCase(), this.now().toISOString()))) {
      throw new ServiceError('validation_failed', 'another account uses this alias', [{ field: 'alias', message: 'is taken' }]);
    }
    this.kept = undefined;
    await this.audit.record({ action: 'board.joined', actor: `user:${owner.user_id}`, accountId, detail: { alias } });
    return alias;
  }

  /** An owner takes their account off the board. */
  async leave(owner: User): Promise<void> {
    const accountId = ownAccount(owner);
    if (!(await this.options.repo.removeAlias(accountId))) return;
    this.kept = undefined;
    await this.audit.record({ action: 'board.left', actor: `user:${owner.user_id}`, accountId });
  }

  private async compute(): Promise<Board> {
    const now = this.now();
    const since = new Date(now.getTime() - BOARD_DAYS * 86_400_000).toISOString();
    const { repo } = this.options;
    const [accounts, aliases] = await Promise.all([this.options.accounts.listAccounts(), repo.aliases()]);
    const trusted = accounts.filter((a) => a.trusted);
    const named = new Set(trusted.filter((a) => !a.disabled && aliases.has(a.account_id)).map((a) => a.account_id));
    const counts = await repo.countsByAccount(trusted.map((a) => a.account_id), since);
    const lines = counts
      .filter((c) => named.has(c.account_id))
      .map((c) => ({ alias: aliases.get(c.account_id)!, events: c.events, numbers: c.numbers }))
      .sort((a, b) => b.events - a.events || b.numbers - a.numbers || a.alias.localeCompare(b.alias))
      .map((line, i) => ({ rank: i + 1, ...line }));
    const unnamed = counts.filter((c) => !named.has(c.account_id));
    const others =
      unnamed.length === 0
        ? null
        : { accounts: unnamed.length, events: unnamed.reduce((sum, c) => sum + c.events, 0), numbers: await repo.distinctNumbers(unnamed.map((c) => c.account_id), since) };
    return { since, lines, others, computed_at: now.toISOString() };
  }
}

function ownAccount(owner: User): string {
  if (owner.role !== 'owner' || owner.account_id === null) throw new ServiceError('not_found', 'only an account’s owner may change this');
  return owner.account_id;
}

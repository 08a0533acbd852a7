import type { Account } from './accounts.ts';
import { validName } from './accounts.ts';
import { NO_AUDIT, type AuditTrail } from './audit.ts';
import { ServiceError } from '../errors.ts';
import { phoneNumberFacts } from '../phone-number.ts';
import { canonicalUuid } from '../uuid.ts';

/**
 * What an account's own events add up to, for its dashboard (docs/dashboard.md): its nodes and
 * the counts behind the overview's charts. Every figure is of the account's own events, never
 * the shared data set's or another account's, so no top-N can reveal another account's number.
 */

/** The event columns a top-N may count by. */
export type ActivityColumn = 'number_key' | 'source_ip' | 'sip_method' | 'transport_type' | 'sip_user_agent';

export interface CountedValue {
  value: string;
  count: number;
}

export interface NodeTotals {
  node_id: string;
  first_event: string;
  last_event: string;
  events: number;
}

export interface NodeBreakdownRow {
  node_id: string;
  value: string;
  count: number;
}

/** Reads over one account's events; every method is bounded to that account in its SQL. */
export interface AccountActivityRepository {
  nodeTotals(accountId: string): Promise<NodeTotals[]>;
  nodeBreakdown(accountId: string, column: 'sip_method' | 'transport_type'): Promise<NodeBreakdownRow[]>;
  /** Events per time bucket since an instant: `hour` buckets are `YYYY-MM-DDTHH`, `day` ones `YYYY-MM-DD`. */
  eventsOverTime(accountId: string, since: string, bucket: 'hour' | 'day'): Promise<CountedValue[]>;
  /** The most frequent values of a column since an instant, most first. */
  top(accountId: string, since: string, column: ActivityColumn, limit: number): Promise<CountedValue[]>;
  /** The names the account gave its nodes, by node id. */
  nodeNames(accountId: string): Promise<Map<string, string>>;
  /** Names a node, or forgets its name (`null`). */
  setNodeName(accountId: string, nodeId: string, name: string | null, at: string): Promise<void>;
}

export interface NodeSummary extends NodeTotals {
  /** What the account calls it; undefined until named. */
  name?: string;
  methods: CountedValue[];
  transports: CountedValue[];
  /** Nothing received from it for longer than the configured silence. */
  silent: boolean;
}

export interface Overview {
  since: string;
  bucket: 'hour' | 'day';
  overTime: CountedValue[];
  calledNumbers: CountedValue[];
  sourceAddresses: CountedValue[];
  methods: CountedValue[];
  transports: CountedValue[];
  userAgents: CountedValue[];
  countries: CountedValue[];
  /** Events by weekday (0 Monday … 6 Sunday) and hour of day (UTC): when attackers work. */
  weekHours: number[][];
}

/** The overview's periods, in days. */
export const OVERVIEW_PERIODS = [1, 7, 30] as const;
const TOP = 10;
/** Numbers read to tell countries apart: enough for a chart of the top countries, bounded in cost. */
const COUNTRY_SAMPLE = 2000;

export class AccountActivity {
  private readonly repo: AccountActivityRepository;
  private readonly now: () => Date;

  private readonly audit: AuditTrail;

  constructor(repo: AccountActivityRepository, now: () => Date = () => new Date(), audit: AuditTrail = NO_AUDIT) {
    this.repo = repo;
    this.now = now;
    this.audit = audit;
  }

  /** The names the account gave its nodes, by node id (its pages show them instead of the UUIDs). */
  nodeNames(account: Account): Promise<Map<string, string>> {
    return this.repo.nodeNames(account.account_id);
  }

  /** Names one of the account's nodes (1 to 200 printable characters), or forgets its name (empty). */
  async nameNode(account: Account, nodeId: string, name: string, actor: string): Promise<void> {
    const node = canonicalUuid(nodeId);
    if (!node) throw new ServiceError('not_found', 'no such node');
    let named: string | null = null;
    if (name.trim() !== '') {
      try {
        named = validName(name.trim());
      } catch {
        throw new ServiceError('validation_failed', 'the name is not valid', [{ field: 'name', message: 'must be 1 to 200 printable characters' }]);
      }
    }
    await this.repo.setNodeName(account.account_id, node, named, this.now().toISOString());
    await this.audit.record({ action: 'node.named', actor, accountId: account.account_id, clientId: null, detail: { node_id: node, name: named } });
  }

  /** One entry per node that submitted events, the most recently heard first. */
  async nodes(account: Account, silentAfterSeconds: number): Promise<NodeSummary[]> {
    const [totals, methods, transports, names] = await Promise.all([
      this.repo.nodeTotals(account.account_id),
      this.repo.nodeBreakdown(account.account_id, 'sip_method'),
      this.repo.nodeBreakdown(account.account_id, 'transport_type'),
      this.repo.nodeNames(account.account_id),
    ]);
    const silentBefore = new Date(this.now().getTime() - silentAfterSeconds * 1000).toISOString();
    const of = (rows: NodeBreakdownRow[], node: string) => rows.filter((r) => r.node_id === node).map(({ value, count }) => ({ value, count }));
    return totals
      .map((t) => ({ ...t, name: names.get(t.node_id), methods: of(methods, t.node_id), transports: of(transports, t.node_id), silent: t.last_event < silentBefore }))
      .sort((a, b) => (a.last_event < b.last_event ? 1 : -1));
  }

  /** The overview of the last `days` days: hourly buckets for a day, daily ones beyond. */
  async overview(account: Account, days: number): Promise<Overview> {
    const since = new Date(this.now().getTime() - days * 86_400_000).toISOString();
    const bucket = days <= 1 ? 'hour' : 'day';
    const id = account.account_id;
    const [overTime, hourly, calledNumbers, sourceAddresses, methods, transports, userAgents, numbers] = await Promise.all([
      this.repo.eventsOverTime(id, since, bucket),
      // The week's hours come from hourly counts: over a day, the same query as the chart's.
      bucket === 'hour' ? Promise.resolve(undefined) : this.repo.eventsOverTime(id, since, 'hour'),
      this.repo.top(id, since, 'number_key', TOP),
      this.repo.top(id, since, 'source_ip', TOP),
      this.repo.top(id, since, 'sip_method', TOP),
      this.repo.top(id, since, 'transport_type', TOP),
      this.repo.top(id, since, 'sip_user_agent', TOP),
      this.repo.top(id, since, 'number_key', COUNTRY_SAMPLE),
    ]);
    return {
      since,
      bucket,
      overTime: everyBucket(overTime, since, this.now(), bucket),
      calledNumbers,
      sourceAddresses,
      methods,
      transports,
      userAgents,
      countries: countriesOf(numbers).slice(0, TOP),
      weekHours: weekHoursOf(hourly ?? overTime),
    };
  }
}

/**
 * One entry per hour or day from `since` to `until`, 0 where no event fell, so that a chart's
 * bars stand evenly in time (the store names only the buckets that hold events). Buckets
 * outside the period (events timed in the future by a node's clock) are kept, in order.
 */
export function everyBucket(counted: CountedValue[], since: string, until: Date, bucket: 'hour' | 'day'): CountedValue[] {
  const length = bucket === 'hour' ? 13 : 10;
  const step = bucket === 'hour' ? 3_600_000 : 86_400_000;
  const counts = new Map(counted.map(({ value, count }) => [value, count]));
  const slots: string[] = [];
  for (let at = Date.parse(since.slice(0, length) + (bucket === 'hour' ? ':00:00Z' : 'T00:00:00Z')); at <= until.getTime(); at += step) {
    slots.push(new Date(at).toISOString().slice(0, length));
  }
  const all = new Set([...slots, ...counts.keys()]);
  return [...all].sort().map((value) => ({ value, count: counts.get(value) ?? 0 }));
}

/** Hourly counts (`YYYY-MM-DDTHH` slots, UTC) folded into weekday (Monday first) by hour of day. */
export function weekHoursOf(hourly: CountedValue[]): number[][] {
  const grid = Array.from({ length: 7 }, () => new Array<number>(24).fill(0));
  for (const { value, count } of hourly) {
    const at = new Date(`${value}:00:00Z`);
    if (Number.isNaN(at.getTime())) continue;
    grid[(at.getUTCDay() + 6) % 7]![at.getUTCHours()]! += count;
  }
  return grid;
}

/** Events per country of the called number; numbers that name no country count as `unknown`. */
export function countriesOf(numbers: CountedValue[]): CountedValue[] {
  const counts = new Map<string, number>();
  for (const { value, count } of numbers) {
    const country = phoneNumberFacts(value)?.country ?? 'unknown';
    counts.set(country, (counts.get(country) ?? 0) + count);
  }
  return [...counts].map(([value, count]) => ({ value, count })).sort((a, b) => b.count - a.count || (a.value < b.value ? -1 : 1));
}

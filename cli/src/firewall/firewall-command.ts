import { setTimeout as sleep } from 'node:timers/promises';
import type { Tollwatch } from '../../../sdk/src/index.ts';
import { ApiCommandError, describeApiFailure } from '../../../src/cli/api-client.ts';
import { UsageError, type ClientSettings } from '../settings.ts';
import { readAllowlists } from './allowlist.ts';
import { BACKENDS, NFT_FAMILIES, type Backend, type SetTarget } from './firewall-sets.ts';
import { syncFirewall, type SyncOutcome } from './firewall-sync.ts';
import { stateFile } from './sync-state.ts';

/** `tollwatch-cli firewall sync`'s options, as parsed from the command line. */
export interface FirewallOptions {
  backend?: string | undefined;
  family?: string | undefined;
  table?: string | undefined;
  'set-v4'?: string | undefined;
  'set-v6'?: string | undefined;
  'min-score'?: string | undefined;
  allow?: string[] | undefined;
  interval?: string | undefined;
  'dry-run'?: boolean | undefined;
  state?: string | undefined;
  json?: boolean | undefined;
}

/** What the command needs from main: the settings, an SDK client for them, and where to write. */
export interface FirewallContext {
  env: NodeJS.ProcessEnv;
  settings: ClientSettings;
  client: Tollwatch;
  timeoutMs: number;
  out: (line: string) => void;
  err: (line: string) => void;
}

/**
 * A name nft and ipset both take as written, short enough for ipset's temporary `NAME-new`
 * within its 31 characters.
 */
const NAME = /^[A-Za-z_][A-Za-z0-9_]{0,26}$/;
/** The shortest interval between polls: the feed changes at most with each fold and each hour. */
const MIN_INTERVAL_SECONDS = 10;

/**
 * `firewall sync`: once (for cron or a systemd timer), or every `--interval` seconds until
 * SIGTERM or SIGINT. Once, the exit status is 0 when the sets hold the feed (applied or
 * unchanged) and 2 when the sync failed, the sets then as they were. In a loop a failure is
 * written to standard error and the next interval tries again.
 */
export async function firewallCommand(subcommand: string | undefined, values: string[], options: FirewallOptions, context: FirewallContext): Promise<number> {
  if (subcommand !== 'sync') throw new UsageError(`firewall: the command is \`firewall sync\`${subcommand === undefined ? '' : `, not ${JSON.stringify(subcommand)}`}`);
  if (values.length > 0) throw new UsageError('firewall sync takes no values');
  const target = targetOf(options);
  const minScore = options['min-score'] === undefined ? undefined : parseMinScore(options['min-score']);
  const interval = options.interval === undefined ? undefined : parseInterval(options.interval);
  const dryRun = options['dry-run'] ?? false;
  if (dryRun && interval !== undefined) throw new UsageError('--dry-run prints one script: not with --interval');
  const allowPaths = options.allow ?? [];
  // Read now, so that a bad line stops the command before anything is fetched.
  readAllowlists(allowPaths);
  const sync = () =>
    syncFirewall({
      client: context.client,
      target,
      minScore,
      // Read again at every sync: an allowlist edited while a loop runs applies at its next turn.
      allowlist: readAllowlists(allowPaths),
      dryRun,
      statePath: options.state ?? stateFile(context.env, target),
      source: { url: context.settings.url, clientId: context.settings.clientId, audience: context.settings.audience },
      bounds: { deadlineMs: context.timeoutMs },
    });
  const report = (result: SyncOutcome) => {
    if (result.outcome === 'dry-run') return context.out(result.script.trimEnd());
    context.out(options.json ? JSON.stringify(result) : describeOutcome(result, target));
  };
  if (interval === undefined) {
    try {
      report(await sync());
      return 0;
    } catch (err) {
      throw err instanceof UsageError ? err : new ApiCommandError(failureMessage(err, context));
    }
  }

  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.once('SIGTERM', onSignal).once('SIGINT', onSignal);
  try {
    while (!stop.signal.aborted) {
      try {
        report(await sync());
      } catch (err) {
        context.err(`tollwatch-cli: ${err instanceof UsageError ? err.message : failureMessage(err, context)}; trying again in ${interval} s`);
      }
      await sleep(interval * 1000, undefined, { signal: stop.signal }).catch(() => {});
    }
    return 0;
  } finally {
    process.off('SIGTERM', onSignal).off('SIGINT', onSignal);
  }
}

function targetOf(options: FirewallOptions): SetTarget {
  const backend = options.backend ?? 'nft';
  if (!(BACKENDS as readonly string[]).includes(backend)) throw new UsageError(`--backend: ${BACKENDS.join(' or ')}`);
  const family = options.family ?? 'inet';
  if (!(NFT_FAMILIES as readonly string[]).includes(family)) throw new UsageError(`--family: one of ${NFT_FAMILIES.join(', ')}`);
  if (backend === 'ipset' && (options.family !== undefined || options.table !== undefined)) throw new UsageError('--family and --table are nft’s: ipset sets stand alone');
  const target: SetTarget = { backend: backend as Backend, family, table: options.table ?? 'tollwatch', v4: options['set-v4'] ?? 'tollwatch_v4', v6: options['set-v6'] ?? 'tollwatch_v6' };
  for (const [option, name] of [
    ['--table', target.table],
    ['--set-v4', target.v4],
    ['--set-v6', target.v6],
  ] as const) {
    if (!NAME.test(name)) throw new UsageError(`${option}: a name of letters, digits and _, starting with a letter or _, at most 27 characters`);
  }
  if (target.v4 === target.v6) throw new UsageError('--set-v4 and --set-v6 name the same set: IPv4 and IPv6 need one each');
  return target;
}

function parseMinScore(value: string): number {
  if (!/^\d{1,3}$/.test(value) || Number(value) > 100) throw new UsageError('--min-score: an integer from 0 to 100');
  return Number(value);
}

function parseInterval(value: string): number {
  const seconds = Number(value);
  if (!/^\d+$/.test(value) || seconds < MIN_INTERVAL_SECONDS || seconds > 86_400) throw new UsageError(`--interval: whole seconds, from ${MIN_INTERVAL_SECONDS} to 86400`);
  return seconds;
}

function describeOutcome(result: Exclude<SyncOutcome, { outcome: 'dry-run' }>, target: SetTarget): string {
  const where = target.backend === 'nft' ? `nft ${target.family} ${target.table} (${target.v4}, ${target.v6})` : `ipset ${target.v4}, ${target.v6}`;
  if (result.outcome === 'unchanged') return `unchanged: ${where} hold the feed applied at ${result.applied_at} (${result.ipv4} IPv4, ${result.ipv6} IPv6; 304 Not Modified)`;
  const allowed = result.allowed_out > 0 ? `; ${result.allowed_out} kept out by --allow` : '';
  return `applied ${result.ipv4} IPv4 and ${result.ipv6} IPv6 addresses to ${where} in ${result.apply_ms} ms${allowed}`;
}

/** Why a sync failed, for standard error, saying that the sets were left alone. */
function failureMessage(err: unknown, context: FirewallContext): string {
  return `${describeApiFailure(err, { TOLLWATCH_URL: context.settings.url }, 'the client id and secret (tollwatch-cli setup)')}; the firewall sets are as they were`;
}

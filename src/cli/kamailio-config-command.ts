import { InvalidArgumentError, Option, type Command } from 'commander';
import type { Run, RunLocal, RunRemote } from './command-group.ts';
import { renderDnsGuardConfig } from './kamailio-dns-guard-config.ts';
import { GUARD_DEFAULTS, GuardSettingError, renderGuardConfig, type GuardSettings } from './kamailio-guard-config.ts';

interface KamailioConfigOptions {
  url?: string;
  clientId?: string;
  threshold: number;
  rangeThreshold?: number;
  refuse: string;
  budgetMs: number;
  fail: 'open' | 'closed';
  failCode: number;
  quota?: 'open' | 'closed' | 'mirror';
  source: boolean;
  mode: 'call' | 'mirror' | 'dns';
  numberZone?: string;
  addressZone?: string;
  mirrorInterval: number;
  mirrorMisses: 'lookup' | 'pass';
  pollUs: number;
}

/**
 * `tollwatch kamailio-config`: prints the Kamailio call guard (integrations/kamailio/) with the
 * operator's URL, client, threshold and modes filled in, for `include_file` in a kamailio.cfg
 * (docs/call-guard.md). The secret comes from TOLLWATCH_CLIENT_SECRET only: a command line is
 * visible to every user of the machine.
 */
export function kamailioConfigCommand(program: Command, _run: Run, _runRemote: RunRemote, _stderr: NodeJS.WritableStream, runLocal: RunLocal): void {
  program
    .command('kamailio-config')
    .description('print the Kamailio call guard configured for this Tollwatch (TOLLWATCH_URL, TOLLWATCH_CLIENT_ID, TOLLWATCH_CLIENT_SECRET)')
    .option('--url <url>', 'the Tollwatch URL Kamailio reaches (default: TOLLWATCH_URL)')
    .option('--client-id <id>', 'the API client the guard uses, with read:phone-numbers and read:ip-addresses (default: TOLLWATCH_CLIENT_ID)')
    .option('--threshold <score>', 'refuse calls whose number or source scores at least this', integer, GUARD_DEFAULTS.threshold)
    .option('--range-threshold <score>', 'also refuse calls to a number never seen whose range (its block of 100) scores at least this (default: off)', integer)
    .addOption(new Option('--refuse <code>', 'the refusal').choices(['403', '603']).default('403'))
    .option('--budget-ms <ms>', 'how long a call may wait for Tollwatch', integer, GUARD_DEFAULTS.budgetMs)
    .addOption(new Option('--fail <mode>', 'past the budget, or with Tollwatch down: let calls through, or refuse them').choices(['open', 'closed']).default('open'))
    .option('--fail-code <code>', 'the 5xx a call gets when failing closed', integer, GUARD_DEFAULTS.failCode)
    .addOption(new Option('--quota <mode>', 'when Tollwatch answers 429 (the allowance spent): let calls through, refuse them, or keep the mirror’s decision (default: as --fail)').choices(['open', 'closed', 'mirror']))
    .option('--no-source', 'do not check the source address, only the called number')
    .addOption(new Option('--mode <mode>', 'ask per call, keep a mirror of the feeds, or ask the DNS zones through the machine’s resolver (docs/dns.md)').choices(['call', 'mirror', 'dns']).default('call'))
    .option('--number-zone <name>', 'in DNS mode, the number zone (default: TOLLWATCH_DNS_NUMBER_ZONE or numbers.tollwatch.internal)')
    .option('--address-zone <name>', 'in DNS mode, the address zone (default: TOLLWATCH_DNS_ADDRESS_ZONE or addresses.tollwatch.internal)')
    .option('--mirror-interval <seconds>', 'how often the mirror is refreshed', integer, GUARD_DEFAULTS.mirrorIntervalSeconds)
    .addOption(new Option('--mirror-misses <what>', 'in mirror mode, what is done with a call the mirror does not hold').choices(['lookup', 'pass']).default('lookup'))
    .option('--poll-us <microseconds>', 'how often a lookup process looks for waiting calls', integer, GUARD_DEFAULTS.pollMicros)
    .action(
      runLocal(async ({ env }, options: KamailioConfigOptions) => {
        // DNS mode has no URL, client or budget: it asks the zones through the machine's resolver.
        if (options.mode === 'dns') {
          if (options.fail === 'closed') throw new GuardSettingError('DNS mode fails open only: the enum module cannot tell "not listed" from "no answer"');
          if (options.rangeThreshold !== undefined) throw new GuardSettingError('--range-threshold needs the lookups (--mode call or mirror): the DNS zones answer numbers, not ranges');
          const dns = {
            numberZone: options.numberZone ?? env.TOLLWATCH_DNS_NUMBER_ZONE ?? 'numbers.tollwatch.internal',
            addressZone: options.addressZone ?? env.TOLLWATCH_DNS_ADDRESS_ZONE ?? 'addresses.tollwatch.internal',
            threshold: options.threshold,
            refuseCode: options.refuse === '603' ? (603 as const) : (403 as const),
            checkSource: options.source,
          };
          const text = renderDnsGuardConfig(dns).trimEnd();
          return { json: { config: text, settings: { mode: 'dns', ...dns } }, text };
        }
        const settings: GuardSettings = {
          url: options.url ?? env.TOLLWATCH_URL ?? '',
          clientId: options.clientId ?? env.TOLLWATCH_CLIENT_ID ?? '',
          clientSecret: env.TOLLWATCH_CLIENT_SECRET ?? '',
          threshold: options.threshold,
          rangeThreshold: options.rangeThreshold ?? null,
          refuseCode: options.refuse === '603' ? 603 : 403,
          budgetMs: options.budgetMs,
          failClosed: options.fail === 'closed',
          failCode: options.failCode,
          quota: options.quota ?? options.fail,
          checkSource: options.source,
          mirror: options.mode === 'mirror',
          mirrorIntervalSeconds: options.mirrorInterval,
          mirrorPassesMisses: options.mirrorMisses === 'pass',
          pollMicros: options.pollUs,
        };
        if (!settings.url) throw new GuardSettingError('no Tollwatch URL: give --url or set TOLLWATCH_URL');
        if (!settings.clientSecret) throw new GuardSettingError('no client secret: set TOLLWATCH_CLIENT_SECRET');
        const text = renderGuardConfig(settings).trimEnd();
        const { clientSecret: _secret, ...shown } = settings;
        return { json: { config: text, settings: shown }, text };
      }),
    );
}

function integer(value: string): number {
  if (!/^[0-9]{1,9}$/.test(value)) throw new InvalidArgumentError('a whole number');
  return Number(value);
}

import { createWriteStream } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { finished } from 'node:stream/promises';
import { InvalidArgumentError, Option, type Command } from 'commander';
import { ZONE_FILE_FORMATS, zoneOrigin, type ZoneFileFormat, type ZoneKind } from '../domain/dns/zone-names.ts';
import type { Run } from './command-group.ts';

interface DnsZoneOptions {
  format: ZoneFileFormat;
  zone: ZoneKind;
  output?: string;
  rpzOrigin?: string;
  minScore?: number;
}

/**
 * `tollwatch dns-zone`: one of the DNS zones (docs/dns.md) as a file for a DNS server of the
 * operator's own: rbldnsd's data, a BIND zone file, or an RPZ zone for a resolver. Written on
 * the store, as feeds are read, from the shared data set only. With `--output`, written to a
 * file beside it and renamed over it at the end, so a server reloading it never reads half.
 */
export function dnsZoneCommand(program: Command, run: Run): void {
  program
    .command('dns-zone')
    .description('write a DNS zone (numbers or addresses) as rbldnsd data, a BIND zone file or an RPZ zone, from the shared data set')
    .addOption(new Option('--format <format>', 'the file format').choices(ZONE_FILE_FORMATS).default('bind'))
    .addOption(new Option('--zone <zone>', 'which zone').choices(['numbers', 'addresses']).default('numbers'))
    .option('--output <file>', 'write to this file (atomically) instead of standard output')
    .option('--rpz-origin <name>', 'with --format rpz: the policy zone’s own name (default: rpz.<zone name>)', (v) => zoneOrigin(v))
    .option('--min-score <score>', 'list names scoring at least this (default: TOLLWATCH_DNS_MIN_SCORE)', score)
    .action(
      run(async (s, options: DnsZoneOptions) => {
        // Loaded here, not at the top: the scoring it brings costs every CLI start half a second,
        // and a dial plan's `tollwatch lookup` starts once a call.
        const { zoneFileLines } = await import('../domain/dns/zone-files.ts');
        const zones = s.config.dns.zones;
        const settings = { ...zones, minScore: options.minScore ?? zones.minScore };
        const origin = settings.origins[options.zone];
        const rpzOrigin = options.rpzOrigin ?? `rpz.${origin}`;
        const source = s.feeds.sharedKept(options.zone === 'numbers' ? 'phone-numbers' : 'ip-addresses', settings.minScore);
        const listed = { count: 0 };
        const lines = zoneFileLines(source, { format: options.format, zone: options.zone, settings, scoring: s.config.scoring, serial: Math.floor(Date.now() / 1000), rpzOrigin, accepted: await s.acceptedReports.load() }, listed);
        const summary = { zone: origin, format: options.format, min_score: settings.minScore, scored_at: source.scoredAt.toISOString() };
        if (!options.output) {
          const text: string[] = [];
          for await (const line of lines) text.push(line);
          return { json: { ...summary, listed: listed.count, text: text.join('\n') }, text: text.join('\n') };
        }
        const partial = `${options.output}.partial`;
        const file = createWriteStream(partial, { mode: 0o644 });
        try {
          for await (const line of lines) if (!file.write(`${line}\n`)) await new Promise<void>((resolve) => file.once('drain', () => resolve()));
          file.end();
          await finished(file);
          await rename(partial, options.output);
        } catch (err) {
          file.destroy();
          await rm(partial, { force: true });
          throw err;
        }
        return { json: { ...summary, listed: listed.count, file: options.output }, text: `${listed.count} names of ${origin} written to ${options.output}` };
      }),
    );
}

function score(value: string): number {
  if (!/^\d{1,3}$/.test(value) || Number(value) < 1 || Number(value) > 100) throw new InvalidArgumentError('an integer from 1 to 100');
  return Number(value);
}

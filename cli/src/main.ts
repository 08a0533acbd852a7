#!/usr/bin/env node
// tollwatch-cli: a Tollwatch API client for shells and dial plans (docs/clients.md). It needs
// neither the server nor its store: the SDK, a config file and a token cache. Not to be confused
// with `tollwatch` (src/cli/), the server's own CLI, whose `lookup` prints the same lines
// (src/cli/lookup-output.ts, which this package compiles in).
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { Tollwatch } from '../../sdk/src/index.ts';
import { describeApiFailure } from '../../src/cli/api-client.ts';
import { escapeControlCharacters } from '../../src/cli/terminal-text.ts';
import { FAILED, FOUND, type OutputFormat } from '../../src/cli/lookup-output.ts';
import { firewallCommand } from './firewall/firewall-command.ts';
import { runLookups } from './lookups.ts';
import { readSecret } from './secret-input.ts';
import { configFile, requireSettings, resolveSettings, saveSettings, UsageError, type ClientSettings } from './settings.ts';
import { tokenFile } from './token-file.ts';

const USAGE = `Usage:
  tollwatch-cli setup --url <server> --client-id <id> [--audience <url>] [--no-verify]
        stores the server and the client's credentials (the secret from standard input, or
        typed at the terminal unseen) in a file readable by you only
  tollwatch-cli lookup [--json | --csv] [--private] [--timeout <seconds>] [<number>... | -]
  tollwatch-cli ip [--json | --csv] [--timeout <seconds>] [<address>... | -]
        with no value, or -, the values are read from standard input, one a line, and sent
        1,000 to a request; exit 0 when any was seen, 1 when none was, 2 on an error
  tollwatch-cli firewall sync [--backend nft | ipset] [--family <f>] [--table <name>]
        [--set-v4 <name>] [--set-v6 <name>] [--min-score <0-100>] [--allow <file>]...
        [--interval <seconds>] [--dry-run] [--state <file>] [--json] [--timeout <seconds>]
        makes an nftables set per IP version (default: inet tollwatch, tollwatch_v4 and
        tollwatch_v6), or an ipset, hold exactly the address feed less the --allow files'
        addresses and ranges, each element timing out at its valid_until; atomic, skipped when
        the feed is unchanged (ETag), left as it was on any failure (exit 2). Once, or every
        --interval seconds; --dry-run prints the nft (or ipset restore) script instead
  tollwatch-cli config
        where the settings come from (environment or config file); the secret is not shown

Environment: TOLLWATCH_URL, TOLLWATCH_CLIENT_ID, TOLLWATCH_CLIENT_SECRET and TOLLWATCH_AUDIENCE
override the config file; TOLLWATCH_CONFIG_DIR moves it (default ~/.config/tollwatch).`;

/** Each request's budget when --timeout is not given: a shell can wait longer than a call. */
const DEFAULT_TIMEOUT_SECONDS = 10;
/** `firewall sync`'s budget for one sync's request when --timeout is not given. */
const FIREWALL_TIMEOUT_SECONDS = 60;

const OPTIONS = {
  url: { type: 'string' },
  'client-id': { type: 'string' },
  audience: { type: 'string' },
  'no-verify': { type: 'boolean' },
  json: { type: 'boolean' },
  csv: { type: 'boolean' },
  private: { type: 'boolean' },
  timeout: { type: 'string' },
  backend: { type: 'string' },
  family: { type: 'string' },
  table: { type: 'string' },
  'set-v4': { type: 'string' },
  'set-v6': { type: 'string' },
  'min-score': { type: 'string' },
  allow: { type: 'string', multiple: true },
  interval: { type: 'string' },
  'dry-run': { type: 'boolean' },
  state: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean' },
} as const;

type Options = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>['values'];

async function main(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true });
  } catch (err) {
    throw new UsageError(`${(err as Error).message}\n\n${USAGE}`);
  }
  const { values: options, positionals } = parsed;
  const [command, ...values] = positionals;
  if (options.version) return print(version());
  if (options.help || command === undefined || command === 'help') return print(USAGE);
  switch (command) {
    case 'setup':
      return setup(options, values);
    case 'lookup':
    case 'ip':
      return lookup(command, options, values);
    case 'config':
      return config(values);
    case 'firewall':
      return firewall(options, values);
    default:
      throw new UsageError(`unknown command ${JSON.stringify(command)}\n\n${USAGE}`);
  }
}

async function setup(options: Options, extra: string[]): Promise<number> {
  if (extra.length > 0) throw new UsageError('setup takes no values: the secret is read from standard input');
  const current = resolveSettings(process.env).settings;
  const url = options.url ?? current.url;
  const clientId = options['client-id'] ?? current.clientId;
  if (!url || !clientId) throw new UsageError('setup needs --url and --client-id');
  const normalised = parseUrl(url);
  const clientSecret = process.env.TOLLWATCH_CLIENT_SECRET || (await readSecret(process.stdin, process.stderr));
  if (!clientSecret) throw new UsageError('no client secret: give it on standard input or in TOLLWATCH_CLIENT_SECRET');
  const settings: ClientSettings = { url: normalised, clientId, clientSecret, audience: options.audience ?? current.audience };
  if (!options['no-verify']) await clientFor(settings, DEFAULT_TIMEOUT_SECONDS * 1000).authenticate({ deadlineMs: DEFAULT_TIMEOUT_SECONDS * 1000 });
  const path = saveSettings(process.env, settings);
  return print(`saved to ${path}${options['no-verify'] ? '' : ' (the server accepted the credentials)'}`);
}

async function lookup(command: 'lookup' | 'ip', options: Options, values: string[]): Promise<number> {
  if (options.json && options.csv) throw new UsageError('--json or --csv, not both');
  if (command === 'ip' && options.private) throw new UsageError('--private is for numbers: addresses have no range lookup');
  const format: OutputFormat = options.json ? 'json' : options.csv ? 'csv' : 'text';
  const timeoutMs = parseTimeout(options.timeout);
  const fromInput = values.length === 0 ? !process.stdin.isTTY : values.length === 1 && values[0] === '-';
  if (values.length === 0 && !fromInput) throw new UsageError(`${command}: give a value, or - to read values from standard input`);
  const client = clientFor(requireSettings(process.env), timeoutMs);
  return runLookups(
    client,
    {
      kind: command === 'lookup' ? 'phone-numbers' : 'ip-addresses',
      values: fromInput ? createInterface({ input: process.stdin, crlfDelay: Infinity }) : values,
      single: !fromInput && values.length === 1,
      format,
      private: options.private ?? false,
      bounds: { deadlineMs: timeoutMs },
    },
    (line) => process.stdout.write(`${line}\n`),
  );
}

async function firewall(options: Options, values: string[]): Promise<number> {
  const [subcommand, ...rest] = values;
  // A firewall sync is no call path: it can wait for a large feed (100,000 entries, some MB).
  const timeoutMs = parseTimeout(options.timeout ?? String(FIREWALL_TIMEOUT_SECONDS));
  const settings = requireSettings(process.env);
  return firewallCommand(subcommand, rest, options, {
    env: process.env,
    settings,
    client: clientFor(settings, timeoutMs),
    timeoutMs,
    out: (line) => process.stdout.write(`${line}\n`),
    err: (line) => process.stderr.write(`${line}\n`),
  });
}

function config(extra: string[]): number {
  if (extra.length > 0) throw new UsageError('config takes no values');
  const { settings, from } = resolveSettings(process.env);
  const lines = [`config file    ${configFile(process.env)}`];
  const show = (label: string, key: keyof ClientSettings, value: string | undefined) => lines.push(`${label.padEnd(15)}${value ?? '(not set)'}${from[key] ? `  (${from[key]})` : ''}`);
  show('url', 'url', settings.url);
  show('client id', 'clientId', settings.clientId);
  show('client secret', 'clientSecret', settings.clientSecret ? 'set' : undefined);
  show('audience', 'audience', settings.audience ?? (settings.url ? 'the server’s own API' : undefined));
  // Each line escaped on its own: a value from the environment or the file may hold anything.
  return print(lines.map(escapeControlCharacters).join('\n'));
}

/** An SDK client that keeps its token in the config directory, its tries bounded by the command's timeout. */
function clientFor(settings: ClientSettings, timeoutMs: number): Tollwatch {
  return new Tollwatch({
    baseUrl: settings.url,
    clientId: settings.clientId,
    clientSecret: settings.clientSecret,
    ...(settings.audience ? { audience: settings.audience } : {}),
    tokenCache: tokenFile(process.env, settings),
    retry: { maxAttempts: 3, timeoutMs },
  });
}

function parseUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new UsageError(`--url: not a URL: ${value} (e.g. https://tollwatch.example.com)`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new UsageError('--url: an http or https URL');
  return url.href.replace(/\/+$/, '');
}

function parseTimeout(value: string | undefined): number {
  if (value === undefined) return DEFAULT_TIMEOUT_SECONDS * 1000;
  const seconds = Number(value);
  if (!/^\d+(\.\d+)?$/.test(value) || !(seconds > 0) || seconds > 3600) throw new UsageError('--timeout: seconds, more than 0 and at most 3600 (0.2 is 200 ms)');
  return Math.max(1, Math.round(seconds * 1000));
}

function version(): string {
  // dist/cli/src/main.js when installed, cli/src/main.ts in the repository.
  for (const path of ['../../../package.json', '../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(path, import.meta.url), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === '@tollwatch/cli') return `tollwatch-cli ${pkg.version}`;
    } catch {
      // The other place.
    }
  }
  return 'tollwatch-cli';
}

function print(text: string): number {
  process.stdout.write(`${text}\n`);
  return FOUND;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    const why = err instanceof UsageError ? err.message : describeApiFailure(err, { TOLLWATCH_URL: resolveSettings(process.env).settings.url }, 'the client id and secret (tollwatch-cli setup)');
    process.stderr.write(`tollwatch-cli: ${why}\n`);
    process.exitCode = FAILED;
  },
);

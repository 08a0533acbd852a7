import { Command, CommanderError } from 'commander';
import { ServiceError } from '../domain/errors.ts';
import type { Services } from '../services.ts';
import { accountsCommands } from './accounts-commands.ts';
import { aggregatesCommand } from './aggregates-command.ts';
import { allowlistCommands } from './allowlist-commands.ts';
import { apiClientFromEnvironment, describeApiFailure, type ApiEnvironment } from './api-client.ts';
import { auditCommand } from './audit-command.ts';
import { backupCommand } from './backup-command.ts';
import { clientsCommands } from './clients-commands.ts';
import { dnsZoneCommand } from './dns-zone-command.ts';
import type { CommandGroup, CommandOutput, Run, RunLocal, RunRemote } from './command-group.ts';
import { importCommand } from './import-command.ts';
import { ingestUrlsCommands } from './ingest-urls-commands.ts';
import { integrationsCommands } from './integrations-commands.ts';
import { kamailioConfigCommand } from './kamailio-config-command.ts';
import { keysCommands } from './keys-commands.ts';
import { lookupCommands } from './lookup-commands.ts';
import { openapiCommand } from './openapi-command.ts';
import { plansCommands } from './plans-commands.ts';
import { shipCommand } from './ship-command.ts';
import { submitCommand } from './submit-command.ts';
import { terminalJson } from './terminal-text.ts';
import { usersCommands } from './users-commands.ts';
import { reportsCommands } from './reports-commands.ts';
import { peersCommands } from './peers-commands.ts';
import { contributorsCommands } from './contributors-commands.ts';

/** The command groups, in the order `--help` lists them: the user commands, then the operator's. */
const COMMAND_GROUPS: readonly CommandGroup[] = [
  lookupCommands,
  submitCommand,
  shipCommand,
  kamailioConfigCommand,
  accountsCommands,
  clientsCommands,
  usersCommands,
  ingestUrlsCommands,
  integrationsCommands,
  allowlistCommands,
  reportsCommands,
  contributorsCommands,
  peersCommands,
  plansCommands,
  keysCommands,
  aggregatesCommand,
  dnsZoneCommand,
  importCommand,
  auditCommand,
  openapiCommand,
  backupCommand,
];

/** Where the CLI reads and writes, and its environment; the process's own unless a test gives others. */
export interface CliIo {
  out: NodeJS.WritableStream;
  err: NodeJS.WritableStream;
  in?: NodeJS.ReadableStream;
  env?: ApiEnvironment;
}

/**
 * The `tollwatch` CLI. Operator commands (docs/api.md §10: `accounts …`, `clients …` and the
 * rest) work on the store named by DATABASE_URL; errors exit 1 (2 for usage). User commands
 * (`lookup`, `ip`, `submit`, `ship`, docs/cli.md) work through a server's API with the SDK and never open
 * a store; they exit 0 found, 1 not found, 2 error. Never a stack trace.
 */
export async function runCli(argv: string[], io: CliIo = { out: process.stdout, err: process.stderr }): Promise<number> {
  const env = io.env ?? process.env;
  let services: Services | undefined;
  // Opened by the first operator action only, so that usage errors, --help and the user
  // commands need no store. Imported then too: a lookup run from a dial plan once per call
  // should not load the store's drivers and the web server first.
  const open = async () => {
    if (services) return services;
    const [{ loadConfig }, { createServices }] = await Promise.all([import('../config.ts'), import('../services.ts')]);
    return (services = await createServices(loadConfig()));
  };
  let output: CommandOutput | undefined;
  let remote = false;
  const run: Run =
    (action) =>
    async (...args) => {
      output = await action(await open(), ...args);
    };
  const runRemote: RunRemote =
    (action) =>
    async (...args) => {
      remote = true;
      output = await action({ client: (retry) => apiClientFromEnvironment(env, retry), stdin: io.in ?? process.stdin, stderr: io.err }, ...args);
    };

  const runLocal: RunLocal =
    (action) =>
    async (...args) => {
      output = await action({ env: { ...env } }, ...args);
    };

  const program = new Command('tollwatch')
    .description('Look up numbers and addresses, and submit events, through a Tollwatch server; operate one: accounts, plans, API clients and node ingest URLs')
    .option('--json', 'print one JSON object on standard output and nothing else')
    .exitOverride()
    .configureOutput({ writeOut: (s) => io.out.write(s), writeErr: (s) => io.err.write(s) });
  for (const addGroup of COMMAND_GROUPS) addGroup(program, run, runRemote, io.err, runLocal);

  try {
    await program.parseAsync(argv, { from: 'user' });
    if (output) io.out.write(`${program.opts().json ? terminalJson(output.json) : output.text}\n`);
    return output?.exitCode ?? 0;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : 2;
    if (remote) {
      io.err.write(`tollwatch: ${describeApiFailure(err, env)}\n`);
      return 2;
    }
    io.err.write(`tollwatch: ${describe(err)}\n`);
    return 1;
  } finally {
    await (services as Services | undefined)?.close();
  }
}

function describe(err: unknown): string {
  if (err instanceof ServiceError) return err.message;
  if (err instanceof Error) return err.message.split('\n')[0] ?? 'failed';
  return 'failed';
}

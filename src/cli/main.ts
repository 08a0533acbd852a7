import { Command, CommanderError } from 'commander';
import { loadConfig } from '../config.ts';
import { ServiceError } from '../domain/errors.ts';
import { createServices, type Services } from '../services.ts';
import { accountsCommands } from './accounts-commands.ts';
import { aggregatesCommand } from './aggregates-command.ts';
import { auditCommand } from './audit-command.ts';
import { backupCommand } from './backup-command.ts';
import { clientsCommands } from './clients-commands.ts';
import type { CommandGroup, CommandOutput, Run } from './command-group.ts';
import { plansCommands } from './plans-commands.ts';
import { terminalJson } from './terminal-text.ts';

/** The command groups, in the order `--help` lists them. */
const COMMAND_GROUPS: readonly CommandGroup[] = [accountsCommands, clientsCommands, plansCommands, aggregatesCommand, auditCommand, backupCommand];

/**
 * The operator CLI (docs/api.md §10): `tollwatch accounts …`, `tollwatch clients …` and the
 * rest against the store named by DATABASE_URL. Errors go to standard error with exit status 1
 * (2 for usage), never with a stack trace.
 */
export async function runCli(argv: string[], io = { out: process.stdout, err: process.stderr }): Promise<number> {
  let services: Services | undefined;
  // Opened by the first action only, so that usage errors and --help need no store.
  const open = async () => (services ??= await createServices(loadConfig()));
  let output: CommandOutput | undefined;
  const run: Run =
    (action) =>
    async (...args) => {
      output = await action(await open(), ...args);
    };

  const program = new Command('tollwatch')
    .description('Operate a Tollwatch service: accounts, plans and API clients')
    .option('--json', 'print one JSON object on standard output and nothing else')
    .exitOverride()
    .configureOutput({ writeOut: (s) => io.out.write(s), writeErr: (s) => io.err.write(s) });
  for (const addGroup of COMMAND_GROUPS) addGroup(program, run);

  try {
    await program.parseAsync(argv, { from: 'user' });
    if (output) io.out.write(`${program.opts().json ? terminalJson(output.json) : output.text}\n`);
    return 0;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : 2;
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

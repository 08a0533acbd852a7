import { Option, type Command } from 'commander';
import { ALLOWLIST_KINDS, OPERATOR_LIST, type AllowlistEntry } from '../domain/allowlists/allowlists.ts';
import { ServiceError } from '../domain/errors.ts';
import type { Run } from './command-group.ts';
import { terminalText } from './terminal-text.ts';

/**
 * `tollwatch allowlist add|list|remove`: the operator's allowlist (docs/api.md §16), whose
 * numbers, prefixes, addresses and ranges leave everything published to everyone (the feeds, the
 * TAXII collections, the DNS zones). Accounts manage their own lists over the API and the dashboard.
 */
export function allowlistCommands(program: Command, run: Run): void {
  const allowlist = program.command('allowlist').description("manage the operator's allowlist: what the feeds, TAXII collections and DNS zones never publish");
  allowlist
    .command('add')
    .description('add a number, number prefix, address or CIDR range; one the list holds already is shown as it is')
    .addOption(new Option('--kind <kind>', 'what the value is').choices(ALLOWLIST_KINDS).makeOptionMandatory())
    .requiredOption('--value <value>', 'the number, prefix, address or range (any spelling lookups take)')
    .option('--note <text>', 'why it is there')
    .action(
      run(async (s, opts: { kind: string; value: string; note?: string }) => {
        const { entry, created } = await named(s.allowlists.add(OPERATOR_LIST, { kind: opts.kind, value: opts.value, note: opts.note }, 'operator'));
        return { json: { ...entry, created }, text: `${created ? 'added' : 'already on the list'}: ${describe(entry)}` };
      }),
    );
  allowlist
    .command('list')
    .description("list the operator's allowlist, oldest first")
    .action(
      run(async (s) => {
        const entries = await s.allowlists.list(OPERATOR_LIST);
        return { json: { entries }, text: entries.length === 0 ? 'the allowlist is empty' : entries.map(describe).join('\n') };
      }),
    );
  allowlist
    .command('remove <id>')
    .description('remove an entry by its id: its value is published again from the next pass')
    .action(
      run(async (s, id: string) => {
        const entry = await s.allowlists.remove(OPERATOR_LIST, id, 'operator');
        return { json: entry, text: `removed: ${describe(entry)}` };
      }),
    );
}

/** A refusal that names its fields: the CLI prints an error's message alone. */
async function named<T>(work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (err) {
    if (err instanceof ServiceError && err.errors) throw new ServiceError(err.code, err.errors.map((e) => `${e.field}: ${e.message}`).join('; '), err.errors);
    throw err;
  }
}

function describe(e: AllowlistEntry): string {
  return terminalText`${e.id}  ${e.kind.padEnd(13)}  ${e.value}  added ${e.added_at} by ${e.added_by}${e.note ? `  (${e.note})` : ''}`;
}

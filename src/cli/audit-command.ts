import type { Command } from 'commander';
import { parseCount } from './arguments.ts';
import type { Run } from './command-group.ts';
import { terminalText } from './terminal-text.ts';

/** `tollwatch audit [--account <id>] [--limit <n>]`: the newest audit entries (docs/api.md §10). */
export function auditCommand(program: Command, run: Run): void {
  program
    .command('audit')
    .description('show the newest audit entries')
    .option('--account <account_id>', 'only this account')
    .option('--limit <n>', 'how many', '50')
    .action(
      run(async (s, opts: { account?: string; limit: string }) => {
        // An empty --account means every account, as it always has.
        const entries = await s.audit.list({ accountId: opts.account || undefined, limit: parseCount(opts.limit) });
        return {
          json: { entries },
          text: entries
            .map((e) => terminalText`${e.at}  ${e.action.padEnd(22)} ${e.actor}  ${e.account_id ?? ''} ${e.client_id ?? ''} ${e.ip ?? ''}`)
            .join('\n'),
        };
      }),
    );
}

import type { Command } from 'commander';
import type { Run } from './command-group.ts';
import { terminalText } from './terminal-text.ts';

/** `tollwatch integrations list`: where an account's alerts go (docs/api.md §12); owners manage them over the API. */
export function integrationsCommands(program: Command, run: Run): void {
  const integrations = program.command('integrations').description("show an account's alert integrations (webhooks, Slack, email)");
  integrations
    .command('list')
    .description("list an account's integrations (never their secrets)")
    .requiredOption('--account <account_id>', 'owning account')
    .action(
      run(async (s, opts: { account: string }) => {
        const all = await s.integrations.listForOperator(opts.account);
        return {
          json: { integrations: all },
          text: all.map((i) => terminalText`${i.id}  ${i.kind.padEnd(7)}  ${i.status.padEnd(20)}  ${i.alert_types.join(',')}  ${i.url ?? i.email ?? ''}  ${i.name}`).join('\n'),
        };
      }),
    );
}

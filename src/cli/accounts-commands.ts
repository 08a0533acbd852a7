import { Option, type Command } from 'commander';
import type { Account } from '../domain/accounts/accounts.ts';
import { TESTER_PLAN } from '../domain/accounts/plans.ts';
import { accountLeaveCommands } from './account-leave-commands.ts';
import { parseYesNo } from './arguments.ts';
import type { CommandOutput, Run } from './command-group.ts';
import { terminalText } from './terminal-text.ts';

/** `tollwatch accounts create|list|set-plan|disable|enable|set-trusted|export|close` (docs/api.md §10, docs/cli.md). */
export function accountsCommands(program: Command, run: Run): void {
  const accounts = program.command('accounts').description('manage accounts');
  accounts
    .command('create')
    .description('create an account')
    .requiredOption('--name <name>', 'account name')
    .addOption(new Option('--plan <plan>', 'plan name').default(TESTER_PLAN.name))
    .option('--trusted', "the account's events join the shared data set")
    .action(
      run(async (s, opts: { name: string; plan: string; trusted?: boolean }) => {
        const a = await s.accounts.createAccount({ name: opts.name, plan: opts.plan, trusted: opts.trusted === true });
        return {
          json: { account_id: a.account_id, name: a.name, plan: a.plan, trusted: a.trusted },
          text: `created account ${a.account_id} (${a.name}, plan ${a.plan}${a.trusted ? ', trusted' : ''})`,
        };
      }),
    );
  accounts
    .command('list')
    .description('list accounts')
    .action(
      run(async (s) => {
        const all = await s.accounts.listAccounts();
        return {
          json: { accounts: all },
          text: all
            .map((a) => terminalText`${a.account_id}  ${a.plan.padEnd(16)} ${a.trusted ? 'trusted ' : ''}${a.disabled ? 'disabled ' : ''}${a.name}`)
            .join('\n'),
        };
      }),
    );
  accounts
    .command('set-plan <account_id> <plan>')
    .description("change an account's plan")
    .action(run(async (s, id: string, plan: string) => accountOutput(await s.accounts.setPlan(id, plan), `plan set to ${plan}`)));
  accounts
    .command('disable <account_id>')
    .description('disable an account: its tokens and credentials stop working')
    .action(run(async (s, id: string) => accountOutput(await s.accounts.setDisabled(id, true), 'disabled')));
  accounts
    .command('enable <account_id>')
    .description('enable a disabled account')
    .action(run(async (s, id: string) => accountOutput(await s.accounts.setDisabled(id, false), 'enabled')));
  accounts
    .command('set-trusted <account_id> <yes|no>')
    .description("mark whether an account's future events join the shared data set")
    .action(
      run(async (s, id: string, value: string) => {
        return accountOutput(await s.accounts.setTrusted(id, parseYesNo(value)), `trusted: ${value}`);
      }),
    );
  accountLeaveCommands(accounts, run);
}

function accountOutput(a: Account, what: string): CommandOutput {
  return { json: a, text: `account ${a.account_id}: ${what}` };
}

import type { Command } from 'commander';
import { ServiceError } from '../domain/errors.ts';
import type { IssuedLink, UserRole } from '../domain/accounts/users.ts';
import type { Run } from './command-group.ts';
import { terminalText } from './terminal-text.ts';

/** `tollwatch users invite|list|disable|enable|reset-password|reset-two-factor` (docs/cli.md, "Dashboard users"). */
export function usersCommands(program: Command, run: Run): void {
  const users = program.command('users').description('manage dashboard users: invitations, password resets, disabling');
  users
    .command('invite')
    .description('create a user and print a one-time link (72 h) to set a password')
    .option('--account <account_id>', 'the account the user belongs to')
    .option('--operator', 'an operator user, of no account')
    .option('--role <role>', 'owner or member', 'owner')
    .requiredOption('--email <email>', "the user's email address")
    .action(
      run(async (s, opts: { account?: string; operator?: boolean; role: string; email: string }) => {
        if (Boolean(opts.operator) === Boolean(opts.account)) throw new ServiceError('validation_failed', 'name the user’s account with --account <account_id>, or make an operator with --operator (not both)');
        const accountId = opts.operator ? null : (opts.account ?? '');
        const role = (opts.operator ? 'operator' : opts.role) as UserRole;
        return linkOutput(await s.users.invite({ accountId, email: opts.email, role }));
      }),
    );
  users
    .command('list')
    .description("list an account's users, or the operators")
    .option('--account <account_id>', 'the account')
    .option('--operators', 'list the operators instead')
    .action(
      run(async (s, opts: { account?: string; operators?: boolean }) => {
        if (Boolean(opts.operators) === Boolean(opts.account)) throw new ServiceError('validation_failed', 'name an account with --account <account_id>, or list the operators with --operators');
        const all = await s.users.list(opts.operators ? null : (opts.account ?? ''));
        return {
          json: { users: all },
          text: all.map((u) => terminalText`${u.user_id}  ${u.role}  ${u.email}${u.disabled ? '  (disabled)' : ''}${u.password_set ? '' : '  (invited)'}`).join('\n'),
        };
      }),
    );
  for (const [name, disabled] of [['disable', true], ['enable', false]] as const) {
    users
      .command(`${name} <user_id>`)
      .description(disabled ? 'disable a user; every session of theirs ends at once' : 'enable a disabled user')
      .action(
        run(async (s, id: string) => {
          const user = await s.users.setDisabled(id, disabled);
          return { json: { user }, text: terminalText`${user.user_id}  ${user.email}  ${disabled ? 'disabled' : 'enabled'}` };
        }),
      );
  }
  users
    .command('reset-password <user_id>')
    .description('print a new one-time link to set a password; earlier links stop working')
    .action(run(async (s, id: string) => linkOutput(await s.users.resetPassword(id))));
  users
    .command('reset-two-factor <user_id>')
    .description("remove a user's two-factor sign-in (phone and recovery codes lost); their sessions end, and they are mailed where mail is configured")
    .action(
      run(async (s, id: string) => {
        const user = await s.users.getUser(id);
        const { removed, mailed } = await s.twoFactor.reset(user);
        return {
          json: { user_id: user.user_id, email: user.email, removed, mailed },
          text: terminalText`${user.user_id}  ${user.email}  ${removed ? 'two-factor sign-in removed' : 'had no two-factor sign-in'}; signed out everywhere${mailed ? '; mailed' : ''}`,
        };
      }),
    );
}

function linkOutput(issued: IssuedLink) {
  return {
    json: { user_id: issued.user.user_id, account_id: issued.user.account_id, email: issued.user.email, role: issued.user.role, link: issued.link, expires_at: issued.expires_at },
    text: terminalText`${issued.user.email} (${issued.user.role})\nlink:    ${issued.link}\nexpires: ${issued.expires_at}\nThe link is shown only now and works once.`,
  };
}

import type { Command } from 'commander';
import type { Run } from './command-group.ts';
import { terminalText } from './terminal-text.ts';

/** `tollwatch clients create|list|reset-secret|delete` (docs/api.md §10). */
export function clientsCommands(program: Command, run: Run): void {
  const clients = program.command('clients').description('manage API clients');
  clients
    .command('create')
    .description('create an API client; its secret is shown once')
    .requiredOption('--account <account_id>', 'owning account')
    .requiredOption('--name <name>', 'client name')
    .option('--permissions <list>', 'comma-separated: write:events,read:events,read:phone-numbers,read:ip-addresses,manage:integrations,manage:allowlist (the last two only when named)')
    .action(
      run(async (s, opts: { account: string; name: string; permissions?: string }) => {
        const permissions = opts.permissions?.split(',').map((p) => p.trim()).filter(Boolean);
        const c = await s.accounts.createClient({ accountId: opts.account, name: opts.name, permissions });
        return {
          json: { client_id: c.client_id, client_secret: c.client_secret, account_id: c.account_id, permissions: c.permissions },
          text: `client_id:     ${c.client_id}\nclient_secret: ${c.client_secret}\npermissions:   ${c.permissions.join(' ')}\nThe secret is shown only now; store it safely.`,
        };
      }),
    );
  clients
    .command('list')
    .description("list an account's clients (never their secrets)")
    .requiredOption('--account <account_id>', 'owning account')
    .action(
      run(async (s, opts: { account: string }) => {
        const all = await s.accounts.listClients(opts.account);
        return { json: { clients: all }, text: all.map((c) => terminalText`${c.client_id}  ${c.permissions.join(' ')}  ${c.name}`).join('\n') };
      }),
    );
  clients
    .command('reset-secret <client_id>')
    .description('replace a secret; tokens issued under the old one stop working at once')
    .action(
      run(async (s, id: string) => {
        const c = await s.accounts.resetSecret(id);
        return { json: c, text: `client_id:     ${c.client_id}\nclient_secret: ${c.client_secret}\nThe secret is shown only now.` };
      }),
    );
  clients
    .command('delete <client_id>')
    .description('delete a client; its tokens stop working at once')
    .action(
      run(async (s, id: string) => {
        await s.accounts.deleteClient(id);
        return { json: { client_id: id, deleted: true }, text: `deleted client ${id}` };
      }),
    );
}

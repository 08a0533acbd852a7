import { Command, CommanderError, Option } from 'commander';
import { loadConfig } from '../config.ts';
import { ServiceError } from '../domain/errors.ts';
import { TESTER_PLAN, type PlanChanges } from '../domain/plans.ts';
import { createServices, type Services } from '../services.ts';

/** What a command prints: one JSON object with --json, readable lines otherwise. */
type Output = { json: object; text: string };

/**
 * The operator CLI (docs/api.md §10): `tollwatch accounts …` and `tollwatch clients …` against
 * the store named by DATABASE_URL. Errors go to standard error with exit status 1 (2 for
 * usage), never with a stack trace.
 */
export async function runCli(argv: string[], io = { out: process.stdout, err: process.stderr }): Promise<number> {
  let services: Services | undefined;
  const open = async () => (services ??= await createServices(loadConfig()));
  let output: Output | undefined;
  const run =
    <A extends unknown[]>(action: (s: Services, ...args: A) => Promise<Output>) =>
    async (...args: A) => {
      output = await action(await open(), ...args);
    };

  const program = new Command('tollwatch')
    .description('Operate a Tollwatch service: accounts, plans and API clients')
    .option('--json', 'print one JSON object on standard output and nothing else')
    .exitOverride()
    .configureOutput({ writeOut: (s) => io.out.write(s), writeErr: (s) => io.err.write(s) });

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
            .map((a) => `${a.account_id}  ${a.plan.padEnd(16)} ${a.trusted ? 'trusted ' : ''}${a.disabled ? 'disabled ' : ''}${a.name}`)
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

  const clients = program.command('clients').description('manage API clients');
  clients
    .command('create')
    .description('create an API client; its secret is shown once')
    .requiredOption('--account <account_id>', 'owning account')
    .requiredOption('--name <name>', 'client name')
    .option('--permissions <list>', 'comma-separated: write:events,read:events,read:phone-numbers,read:ip-addresses')
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
        return { json: { clients: all }, text: all.map((c) => `${c.client_id}  ${c.permissions.join(' ')}  ${c.name}`).join('\n') };
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

  const plans = program.command('plans').description('manage plans (what accounts on each may do)');
  plans
    .command('list')
    .description('list plans and their limits')
    .action(
      run(async (s) => {
        const all = await s.plans.all();
        return {
          json: { plans: all },
          text: all
            .map(
              (p) =>
                `${p.name.padEnd(18)} submit: ${p.maySubmit ? 'yes' : 'no '}  lookups: ${describeWindow(p.lookups)}  submissions: ${p.submissions ? describeWindow(p.submissions) : '-'}  clients: ${p.maxClients ?? 'unlimited'}`,
            )
            .join('\n'),
        };
      }),
    );
  plans
    .command('set <name>')
    .description('create or change a plan; limits are N/second, N/minute, N/hour or N/day')
    .option('--may-submit <yes|no>', 'whether accounts on it may submit events')
    .option('--lookups <N/window>', 'phone and IP lookups allowed')
    .option('--submissions <N/window|none>', 'event submissions allowed')
    .option('--max-clients <N|unlimited>', 'API clients an account may hold')
    .action(
      run(async (s, name: string, opts: { maySubmit?: string; lookups?: string; submissions?: string; maxClients?: string }) => {
        const changes: PlanChanges = {
          ...(opts.maySubmit !== undefined ? { maySubmit: parseYesNo(opts.maySubmit) } : {}),
          ...(opts.lookups !== undefined ? { lookups: parseWindow(opts.lookups) } : {}),
          ...(opts.submissions !== undefined ? { submissions: opts.submissions === 'none' ? null : parseWindow(opts.submissions) } : {}),
          ...(opts.maxClients !== undefined ? { maxClients: opts.maxClients === 'unlimited' ? null : parseCount(opts.maxClients) } : {}),
        };
        const plan = await s.plans.change(name, changes);
        return { json: plan, text: `plan ${name} saved` };
      }),
    );

  program
    .command('aggregates')
    .description('lookup aggregates')
    .command('rebuild')
    .description('recompute every lookup aggregate from the stored events (after bulk loads or trust changes)')
    .action(
      run(async (s) => {
        const started = Date.now();
        await s.rebuildAggregates();
        const seconds = (Date.now() - started) / 1000;
        return { json: { rebuilt: true, seconds }, text: `aggregates rebuilt in ${seconds.toFixed(1)} s` };
      }),
    );

  program
    .command('audit')
    .description('show the newest audit entries')
    .option('--account <account_id>', 'only this account')
    .option('--limit <n>', 'how many', '50')
    .action(
      run(async (s, opts: { account?: string; limit: string }) => {
        // An empty --account means every account, as it always has.
        const rows = await s.audit.list({ accountId: opts.account || undefined, limit: parseCount(opts.limit) });
        return {
          json: { entries: rows },
          text: rows.map((r) => `${r.at}  ${r.action.padEnd(22)} ${r.actor}  ${r.account_id ?? ''} ${r.client_id ?? ''} ${r.ip ?? ''}`).join('\n'),
        };
      }),
    );

  try {
    await program.parseAsync(argv, { from: 'user' });
    if (output) io.out.write(`${program.opts().json ? JSON.stringify(output.json) : output.text}\n`);
    return 0;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : 2;
    io.err.write(`tollwatch: ${describe(err)}\n`);
    return 1;
  } finally {
    await (services as Services | undefined)?.close();
  }
}

function accountOutput(a: { account_id: string; name: string; plan: string; trusted: boolean; disabled: boolean }, what: string): Output {
  return { json: a, text: `account ${a.account_id}: ${what}` };
}

const WINDOWS: Record<string, number> = { second: 1, minute: 60, hour: 3600, day: 86_400 };

function parseWindow(value: string): { limit: number; windowSeconds: number } {
  const m = /^(\d+)\/(second|minute|hour|day)$/.exec(value.trim());
  if (!m) throw new ServiceError('validation_failed', `${JSON.stringify(value)} is not N/second, N/minute, N/hour or N/day`);
  return { limit: Number(m[1]), windowSeconds: WINDOWS[m[2]!]! };
}

function describeWindow(window: { limit: number; windowSeconds: number }): string {
  const unit = Object.entries(WINDOWS).find(([, seconds]) => seconds === window.windowSeconds)?.[0];
  return unit ? `${window.limit}/${unit}` : `${window.limit}/${window.windowSeconds}s`;
}

function parseCount(value: string): number {
  // Beyond 2^53 a number is no longer the one typed; the plan checks already refuse such counts.
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(Number(value))) throw new ServiceError('validation_failed', `${JSON.stringify(value)} is not a whole number`);
  return Number(value);
}

function parseYesNo(value: string): boolean {
  if (value !== 'yes' && value !== 'no') throw new ServiceError('validation_failed', 'say yes or no');
  return value === 'yes';
}

function describe(err: unknown): string {
  if (err instanceof ServiceError) return err.message;
  if (err instanceof Error) return err.message.split('\n')[0] ?? 'failed';
  return 'failed';
}

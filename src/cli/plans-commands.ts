import type { Command } from 'commander';
import { planJson, type PlanChanges } from '../domain/accounts/plans.ts';
import { describeWindow, parseCount, parseWindow, parseYesNo } from './arguments.ts';
import type { Run } from './command-group.ts';
import { terminalText } from './terminal-text.ts';

interface PlanOptions {
  maySubmit?: string;
  lookups?: string;
  submissions?: string;
  maxClients?: string;
  eventReads?: string;
}

/** `tollwatch plans list|set` (docs/api.md §9, §10). */
export function plansCommands(program: Command, run: Run): void {
  const plans = program.command('plans').description('manage plans (what accounts on each may do)');
  plans
    .command('list')
    .description('list plans and their limits')
    .action(
      run(async (s) => {
        const all = await s.plans.all();
        return {
          json: { plans: all.map(planJson) },
          text: all
            .map(
              (p) =>
                terminalText`${p.name.padEnd(18)} submit: ${p.maySubmit ? 'yes' : 'no '}  lookups: ${describeWindow(p.lookups)}  submissions: ${p.submissions ? describeWindow(p.submissions) : '-'}  clients: ${p.maxClients ?? 'unlimited'}  event reads: ${describeWindow(p.eventReads)}`,
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
    .option('--event-reads <N/window>', "reads of the account's own events (pages and single events)")
    .action(
      run(async (s, name: string, opts: PlanOptions) => {
        const plan = await s.plans.change(name, planChanges(opts));
        return { json: planJson(plan), text: `plan ${name} saved` };
      }),
    );
}

/** The changes the options ask for; an option not given changes nothing. */
function planChanges(opts: PlanOptions): PlanChanges {
  return {
    ...(opts.maySubmit !== undefined ? { maySubmit: parseYesNo(opts.maySubmit) } : {}),
    ...(opts.lookups !== undefined ? { lookups: parseWindow(opts.lookups) } : {}),
    ...(opts.submissions !== undefined ? { submissions: opts.submissions === 'none' ? null : parseWindow(opts.submissions) } : {}),
    ...(opts.maxClients !== undefined ? { maxClients: opts.maxClients === 'unlimited' ? null : parseCount(opts.maxClients) } : {}),
    ...(opts.eventReads !== undefined ? { eventReads: parseWindow(opts.eventReads) } : {}),
  };
}

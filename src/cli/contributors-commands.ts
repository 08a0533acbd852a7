import type { Command } from 'commander';
import type { ContributorRequest, ContributorRequestStatus } from '../domain/accounts/contributor-requests.ts';
import type { Run } from './command-group.ts';
import { terminalText } from './terminal-text.ts';

const STATES: readonly ContributorRequestStatus[] = ['open', 'approved', 'declined'];

/** One request as a line for the operator: what the owner wrote is escaped. */
function requestLine(r: ContributorRequest): string {
  const decided = r.status === 'open' ? '' : `  ${r.decided_by ?? ''} ${r.decided_at ?? ''}${r.reason ? `  “${r.reason}”` : ''}`;
  return terminalText`${r.request_id}  ${r.status.padEnd(8)}  ${r.created_at}  account ${r.account_id}  “${r.honeypots}”${decided}`;
}

/**
 * `tollwatch contributors list|approve|decline`: the requests for the contributor plan that
 * account owners make from the dashboard (docs/cli.md, docs/dashboard.md).
 */
export function contributorsCommands(program: Command, run: Run): void {
  const contributors = program.command('contributors').description('decide requests for the contributor plan');
  contributors
    .command('list')
    .description('list requests, oldest first (the open ones by default)')
    .option('--status <status>', `${STATES.join(', ')} or all`, 'open')
    .action(
      run(async (s, opts: { status: string }) => {
        if (opts.status !== 'all' && !(STATES as readonly string[]).includes(opts.status)) throw new Error(`--status must be one of: ${STATES.join(', ')}, all`);
        const listed = await s.contributorRequests.list(opts.status === 'all' ? undefined : (opts.status as ContributorRequestStatus));
        return { json: { requests: listed }, text: listed.length === 0 ? `no ${opts.status === 'all' ? '' : `${opts.status} `}requests` : listed.map(requestLine).join('\n') };
      }),
    );
  contributors
    .command('approve <request-id>')
    .description('approve an open request: the account moves to the contributor plan and its owners are mailed')
    .action(
      run(async (s, id: string) => {
        const request = await s.contributorRequests.approve(id, 'operator');
        return { json: { request }, text: requestLine(request) };
      }),
    );
  contributors
    .command('decline <request-id>')
    .description('decline an open request; the owners are mailed the reason')
    .requiredOption('--reason <text>', 'why, mailed to the account’s owners')
    .action(
      run(async (s, id: string, opts: { reason: string }) => {
        const request = await s.contributorRequests.decline(id, opts.reason, 'operator');
        return { json: { request }, text: requestLine(request) };
      }),
    );
}

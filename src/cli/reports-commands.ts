import type { Command } from 'commander';
import { REPORT_STATES, type ReportState, type StoredReport } from '../domain/intelligence/value-reports.ts';
import type { Run } from './command-group.ts';
import { terminalText } from './terminal-text.ts';

/** One report as a line for the operator: every value an account chose is escaped. */
function reportLine(r: StoredReport): string {
  const value = r.kind === 'number' ? `number ${r.value}` : `address ${r.value}`;
  return terminalText`${r.id}  ${r.state.padEnd(8)}  ${r.created_at}  account ${r.account_id}  ${value}  ${r.reason}${r.note ? `  “${r.note}”` : ''}${r.decision_note ? `  decided: ${r.decision_note}` : ''}`;
}

/**
 * `tollwatch reports list|accept|reject`: the operator's review queue of false-positive reports
 * (docs/cli.md). An accepted report holds the value's score down for every caller (docs/scoring.md).
 */
export function reportsCommands(program: Command, run: Run): void {
  const reports = program.command('reports').description('review false-positive reports of lookup answers');
  reports
    .command('list')
    .description('list reports, oldest first (the pending ones by default)')
    .option('--state <state>', `${REPORT_STATES.join(', ')} or all`, 'pending')
    .action(
      run(async (s, opts: { state: string }) => {
        if (opts.state !== 'all' && !(REPORT_STATES as readonly string[]).includes(opts.state)) {
          throw new Error(`--state must be one of: ${REPORT_STATES.join(', ')}, all`);
        }
        const listed = await s.reports.queue(opts.state === 'all' ? undefined : (opts.state as ReportState));
        return { json: { reports: listed }, text: listed.length === 0 ? `no ${opts.state === 'all' ? '' : `${opts.state} `}reports` : listed.map(reportLine).join('\n') };
      }),
    );
  reports
    .command('accept <id>')
    .description("accept a pending report: the value's score is held down for every caller")
    .option('--note <text>', 'why, shown to the reporting account')
    .action(
      run(async (s, id: string, opts: { note?: string }) => {
        const report = await s.reports.accept(id, opts.note, 'operator');
        return { json: { report }, text: reportLine(report) };
      }),
    );
  reports
    .command('reject <id>')
    .description('reject a pending report (nothing changes), or withdraw an accepted one (its hold on the score is lifted)')
    .option('--note <text>', 'why, shown to the reporting account')
    .action(
      run(async (s, id: string, opts: { note?: string }) => {
        const report = await s.reports.reject(id, opts.note, 'operator');
        return { json: { report }, text: reportLine(report) };
      }),
    );
}

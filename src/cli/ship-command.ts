import { basename, resolve } from 'node:path';
import { Option, type Command } from 'commander';
import { wholeNumberOption } from './arguments.ts';
import type { CommandOutput, Run, RunRemote } from './command-group.ts';
import { LogShipper, type ShipStatus } from './log-shipper.ts';
import { count, ProgressLine } from './progress-line.ts';
import { defaultStatePath } from './ship-state.ts';
import { terminalText } from './terminal-text.ts';

/** Lines per request at most: the batch route's bound (docs/api.md §5). */
const MAX_BATCH = 1000;

/**
 * `tollwatch ship <sentrypeer_json.log> [--follow] [--state <file>]` (docs/cli.md): forwards a
 * SentryPeer node's JSON log through the batch route, resuming from the offset its state file
 * records. Exit 0 when every line was stored (created, or already there), 1 when some were
 * refused (reported on standard error as they happen), 2 on error.
 */
export function shipCommand(program: Command, _run: Run, runRemote: RunRemote): void {
  program
    .command('ship <log>')
    .description("forward a SentryPeer node's JSON log in batches, resuming where the last run stopped; --follow keeps shipping as it grows and is rotated")
    .option('--follow', 'keep shipping new lines, across rotation and truncation, until interrupted')
    .option('--state <file>', 'where the shipped offset is kept (default: <log>.tollwatch-state beside the log)')
    .addOption(new Option('--batch-size <lines>', `lines per request, 1 to ${MAX_BATCH}`).default(MAX_BATCH).argParser(wholeNumberOption(1, MAX_BATCH)))
    .addOption(new Option('--poll-interval <ms>', 'how often a followed log is looked at, in milliseconds').default(1000).argParser(wholeNumberOption(10, 3_600_000)))
    .action(
      runRemote(async (c, log: string, opts: { follow?: boolean; state?: string; batchSize: number; pollInterval: number }) => {
        const logPath = resolve(log);
        const statePath = resolve(opts.state ?? defaultStatePath(logPath));
        const progress = new ProgressLine(c.stderr);
        const started = Date.now();
        const stop = new AbortController();
        // The first interrupt stops after the batch in flight, its offset saved; a second one,
        // with no listener left, ends the process at once (nothing unacknowledged is recorded).
        const interrupt = () => stop.abort();
        process.once('SIGINT', interrupt);
        process.once('SIGTERM', interrupt);
        const shipper = new LogShipper(
          c.client(),
          { logPath, statePath, follow: opts.follow === true, batchSize: opts.batchSize, pollMs: opts.pollInterval, signal: stop.signal },
          {
            refused: (file, line, reason) => progress.print(terminalText`tollwatch: ${file} line ${line}: ${reason}`),
            notice: (message) => progress.print(terminalText`tollwatch: ${message}`),
            progress: (status) => progress.update(statusLine(status, started), status.activity !== 'shipping'),
          },
        );
        let totals;
        try {
          totals = await shipper.run();
        } finally {
          progress.clear();
          process.off('SIGINT', interrupt);
          process.off('SIGTERM', interrupt);
        }
        const { created, replayed, conflict, invalid } = totals;
        return {
          json: { log: logPath, state: statePath, ...totals },
          text: terminalText`${created + replayed + conflict + invalid} events from ${logPath}: ${created} created, ${replayed} already stored, ${conflict} conflicting, ${invalid} invalid`,
          exitCode: conflict + invalid > 0 ? 1 : 0,
        } satisfies CommandOutput;
      }),
    );
}

/** The progress line: where it is, what became of the events, and how fast. */
function statusLine(status: ShipStatus, started: number): string {
  const { created, replayed, conflict, invalid } = status.totals;
  const seconds = Math.max(0.001, (Date.now() - started) / 1000);
  const rate = Math.round((created + replayed + conflict + invalid) / seconds);
  return terminalText`ship ${basename(status.file)} line ${count(status.line)}: ${count(created)} created, ${count(replayed)} already stored, ${count(conflict + invalid)} refused, ${count(rate)}/s; ${status.activity}`;
}

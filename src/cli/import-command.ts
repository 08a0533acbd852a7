import { resolve } from 'node:path';
import { Option, type Command } from 'commander';
// Types only: the validation behind the import loads with the services, not with every command.
import type { ImportProblem, ImportTotals } from '../import/event-import.ts';
import { wholeNumberOption } from './arguments.ts';
import type { CommandOutput, Run, RunRemote } from './command-group.ts';
import { count, ProgressLine, progressBar } from './progress-line.ts';
import { terminalText } from './terminal-text.ts';

/** Problems listed one per line on standard error; beyond this many they are only counted. */
const LISTED_PROBLEMS = 100;

/**
 * Events per fold step after a bulk import: nothing else waits on the store, and each busy
 * aggregate row is read and written once for more events. Measured here folding 200,000 of
 * the benchmark's events (bench/suites/import.ts's log): 12.1 s in steps of 20,000, 8.6 s of 100,000.
 */
const BULK_FOLD_CHUNK = 100_000;

const SOURCE_NAMES = { 'sentrypeer-log': 'SentryPeer JSON log', 'sentrypeer-database': 'SentryPeer database' } as const;

/**
 * `tollwatch import --account <id> <file>` (docs/operations.md): a SentryPeer JSON log or SQLite
 * database straight into the store. The import itself is the domain's (import/event-import.ts);
 * this parses the arguments and shows progress.
 */
export function importCommand(program: Command, run: Run, _runRemote: RunRemote, stderr: NodeJS.WritableStream): void {
  program
    .command('import <file>')
    .description("import a SentryPeer JSON log or SQLite database into an account (a trusted account's events join the shared data set); running it again imports only what is missing")
    .requiredOption('--account <account_id>', 'the account the events belong to')
    .addOption(new Option('--batch-size <events>', 'events per transaction (default: 10000; more holds a SQLite store\'s write lock longer)').argParser(wholeNumberOption(1, 100_000)))
    .option('--bulk', "for a first load, or with the servers stopped: set the events' query indexes aside while loading and build them again at the end, and fold in larger steps")
    .addOption(new Option('--app-version <version>', "app_version for a database's rows, which do not keep it").default('unknown'))
    .addOption(new Option('--destination-ip <address>', "destination_ip for a database's rows, which do not keep it: the node's address").default('0.0.0.0'))
    .action(
      run(async (s, file: string, opts: { account: string; batchSize?: number; bulk?: boolean; appVersion: string; destinationIp: string }) => {
        const path = resolve(file);
        const source = await s.openImportSource(path, { appVersion: opts.appVersion, destinationIp: opts.destinationIp });
        const progress = new ProgressLine(stderr);
        const started = performance.now();
        let listed = 0;
        const report = (p: ImportProblem) => {
          if (++listed > LISTED_PROBLEMS) return;
          const where = source.kind === 'sentrypeer-database' ? `honey_id ${p.position}` : `line ${p.position}`;
          const fields = (p.errors ?? []).map((e) => `; ${e.field} ${e.message}`).join('');
          progress.print(terminalText`tollwatch: ${where}: ${p.status}${p.event_uuid ? ` ${p.event_uuid}` : ''}${fields}`);
        };
        let result;
        const foldChunk = opts.bulk ? BULK_FOLD_CHUNK : undefined;
        try {
          result = await s.importer.run(opts.account, source, {
            ...(opts.batchSize ? { batchSize: opts.batchSize } : {}),
            bulk: opts.bulk === true,
            onStage: (stage) => progress.update(`import: ${stage}`),
            onProblem: report,
            onProgress: (totals, done, size) => progress.update(progressText(totals, done, size, started)),
            // Where the fold has a connection of its own, the batches committed are folded while the next ones are stored.
            ...(s.database.caps.concurrentWriters ? { foldAlong: () => s.aggregateFolder.foldOnce(foldChunk) } : {}),
          });
          // The lookup aggregates count the events once folded in: here, rather than by the next
          // server to start, so lookups find them when the command returns.
          progress.update('import: folding the events into the lookup aggregates');
          await s.aggregateFolder.settle(foldChunk);
        } finally {
          progress.clear();
          await source.close();
        }
        if (listed > LISTED_PROBLEMS) stderr.write(`tollwatch: ${count(listed - LISTED_PROBLEMS)} more not listed\n`);
        const seconds = (performance.now() - started) / 1000;
        const { account, scope, totals } = result;
        const rate = Math.round(totals.read / Math.max(seconds, 0.001));
        const shared = scope !== account.account_id;
        return {
          json: { account_id: account.account_id, scope: shared ? 'shared' : 'account', source: source.kind, file: path, ...totals, seconds: Number(seconds.toFixed(3)), events_per_second: rate },
          text: terminalText`imported ${path} (${SOURCE_NAMES[source.kind]}) into ${shared ? 'the shared data set, through trusted account' : 'account'} ${account.account_id}: ${count(totals.read)} events, ${count(totals.imported)} new, ${count(totals.replayed)} already stored, ${count(totals.conflict)} conflicting, ${count(totals.invalid)} invalid; ${seconds.toFixed(1)} s, ${count(rate)} events/s`,
        } satisfies CommandOutput;
      }),
    );
}

function progressText(totals: ImportTotals, done: number, size: number, started: number): string {
  const rate = Math.round(totals.read / Math.max((performance.now() - started) / 1000, 0.001));
  return `import ${progressBar(size > 0 ? done / size : 1)} ${count(totals.read)} events, ${count(totals.imported)} new, ${count(rate)}/s`;
}

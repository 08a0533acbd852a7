import type { Command } from 'commander';
import type { Run } from './command-group.ts';

/** `tollwatch aggregates rebuild` (docs/api.md §10). */
export function aggregatesCommand(program: Command, run: Run): void {
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
}

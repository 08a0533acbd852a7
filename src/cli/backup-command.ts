import type { Command } from 'commander';
import { loadConfig } from '../config.ts';
import type { Services } from '../services.ts';
import type { CommandOutput, Run } from './command-group.ts';
import { terminalText } from './terminal-text.ts';

/** `tollwatch backup <file>`: a consistent copy of the SQLite store while the server runs (docs/operations.md, Backups). */
export function backupCommand(program: Command, run: Run): void {
  const backup = run(backupInto);
  program
    .command('backup <file>')
    .description('copy the SQLite store into a new file, consistently, while the server runs (PostgreSQL: use pg_dump)')
    .action(async (file: string) => {
      // Refused before the store is opened: PostgreSQL is neither migrated nor keyed for this.
      const { backupRefusal } = await import('../services.ts');
      const refusal = backupRefusal(loadConfig().databaseUrl);
      if (refusal) throw new Error(refusal);
      await backup(file);
    });
}

async function backupInto(s: Services, file: string): Promise<CommandOutput> {
  const report = await s.backup(file);
  // The copy is useless without the key secret that seals its keys: say where that is.
  const { key } = report;
  const keep = key === 'TOLLWATCH_KEY_SECRET' ? '; keep the value of TOLLWATCH_KEY_SECRET with it' : key ? terminalText`; keep the key file ${key} with it` : '';
  return {
    json: report,
    text: terminalText`backed up ${report.pages} pages (${(report.bytes / 2 ** 20).toFixed(1)} MiB) to ${report.file} in ${report.seconds.toFixed(1)} s` + keep,
  };
}

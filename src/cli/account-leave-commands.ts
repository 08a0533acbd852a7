import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Command } from 'commander';
import { ServiceError } from '../domain/errors.ts';
import type { Run } from './command-group.ts';
import { terminalText } from './terminal-text.ts';

/** `tollwatch accounts export|close` (docs/cli.md): an account's data handed over, and the account erased. */
export function accountLeaveCommands(accounts: Command, run: Run): void {
  accounts
    .command('export <account_id>')
    .description("write everything the account holds (no secret) to a new NDJSON file")
    .requiredOption('--output <file>', 'the file to write; refused if it exists')
    .action(
      run(async (s, id: string, opts: { output: string }) => {
        const lines = await s.accountExports.open(id, 'operator');
        // 'wx': an export never overwrites a file, and a failed one leaves none behind.
        try {
          await pipeline(Readable.from(lines), createWriteStream(opts.output, { flags: 'wx' }));
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'EEXIST') await rm(opts.output, { force: true });
          throw err;
        }
        return { json: { account_id: id, file: opts.output }, text: terminalText`exported account ${id} to ${opts.output}` };
      }),
    );
  accounts
    .command('close <account_id>')
    .description('close an account for good: refused at once, then every row of it erased')
    .requiredOption('--confirm <account_id>', 'the account id again, to confirm')
    .action(
      run(async (s, id: string, opts: { confirm: string }) => {
        if (opts.confirm !== id) {
          throw new ServiceError('validation_failed', '--confirm must repeat the account id', [{ field: 'confirm', message: 'must repeat the account id' }]);
        }
        await s.accountClosing.begin(id, 'operator');
        const record = await s.accountClosing.finish(id);
        const erased = record?.erased ?? {};
        const rows = Object.values(erased).reduce((sum, n) => sum + n, 0);
        return {
          json: { account_id: id, closed: record !== undefined, erased },
          text: record ? `closed account ${id}: ${rows} rows erased` : `account ${id} is closing: another process is erasing it`,
        };
      }),
    );
}

import type { Command } from 'commander';
import type { Services } from '../services.ts';
import type { Run } from './command-group.ts';
import { terminalText } from './terminal-text.ts';

/** `tollwatch keys list|rotate`: the token-signing keys (docs/operations.md, Keys). */
export function keysCommands(program: Command, run: Run): void {
  const keys = program.command('keys').description('the keys that sign access tokens');
  keys
    .command('list')
    .description('list the signing keys: which one signs, and when the others retire')
    .action(
      run(async (s) => {
        const all = await s.signingKeys.list();
        return { json: { keys: all }, text: all.map(describeKey).join('\n') };
      }),
    );
  keys
    .command('rotate')
    .description('make a new key sign new tokens; the old one verifies until its last token has expired, then retires')
    .action(
      run(async (s) => {
        const rotation = await s.signingKeys.rotate();
        const previous = rotation.previous ? terminalText`; ${rotation.previous.kid} verifies until ${rotation.previous.retires_at}, then retires` : '';
        return { json: rotation, text: terminalText`new signing key ${rotation.kid}` + previous };
      }),
    );
}

/** One key as listed (the CLI reaches the keys through the services only). */
type KeyEntry = Awaited<ReturnType<Services['signingKeys']['list']>>[number];

function describeKey(key: KeyEntry): string {
  const state = key.current ? 'current' : key.retires_at && Date.parse(key.retires_at) <= Date.now() ? `retired ${key.retires_at}` : `retires ${key.retires_at}`;
  return terminalText`${key.kid}  created ${key.created_at}  ${state}`;
}

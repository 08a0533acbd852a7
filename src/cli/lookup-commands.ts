import type { Command } from 'commander';
import type { IpAddressLookup, PhoneNumberLookup, RangeLookup, RetryPolicy } from '../../sdk/src/index.ts';
import { describeIpAddress, describePhoneNumber, describeRange, FOUND, NOT_FOUND } from './lookup-output.ts';
import type { CommandOutput, Run, RunRemote } from './command-group.ts';

/**
 * A lookup is often asked while a call waits (a dial plan): a few quick tries, and a server
 * that asks for more than a few seconds' patience is an answer of its own (exit 2).
 */
export const LOOKUP_RETRY: Partial<RetryPolicy> = { maxAttempts: 3, timeoutMs: 5_000, maxRetryAfterSeconds: 5 };

/** Exit statuses of the lookups, for dial plans and scripts (docs/cli.md): the user CLI's. */
export { FOUND, NOT_FOUND };

/** `tollwatch lookup <number>` and `tollwatch ip <address>`: the user's lookups through the API (docs/api.md §7). */
export function lookupCommands(program: Command, _run: Run, runRemote: RunRemote): void {
  program
    .command('lookup <number>')
    .description('have attackers tried to call this number? exit 0 seen, 1 not seen, 2 error')
    .option('--private', 'send only 5 hex digits of the number’s SHA-256, never the number (a range lookup)')
    .action(
      runRemote(async (c, number: string, options: { private?: boolean }) =>
        options.private ? rangeOutput(await c.client(LOOKUP_RETRY).rangeLookup(number)) : phoneNumberOutput(await c.client(LOOKUP_RETRY).lookupPhoneNumber(number)),
      ),
    );
  program
    .command('ip <address>')
    .description('has this address probed honeypots? exit 0 seen, 1 not seen, 2 error')
    .action(runRemote(async (c, address: string) => ipAddressOutput(await c.client(LOOKUP_RETRY).lookupIpAddress(address))));
}

function phoneNumberOutput(answer: PhoneNumberLookup): CommandOutput {
  return { json: answer, text: describePhoneNumber(answer), exitCode: answer.found ? FOUND : NOT_FOUND };
}

function rangeOutput(answer: RangeLookup): CommandOutput {
  return { json: answer, text: describeRange(answer), exitCode: answer.found ? FOUND : NOT_FOUND };
}

function ipAddressOutput(answer: IpAddressLookup): CommandOutput {
  return { json: answer, text: describeIpAddress(answer), exitCode: answer.found ? FOUND : NOT_FOUND };
}

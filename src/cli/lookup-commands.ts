import type { Command } from 'commander';
import type { IpAddressLookup, PhoneNumberLookup, RangeLookup, RetryPolicy } from '../../sdk/src/index.ts';
import type { CommandOutput, Run, RunRemote } from './command-group.ts';
import { terminalText } from './terminal-text.ts';

/**
 * A lookup is often asked while a call waits (a dial plan): a few quick tries, and a server
 * that asks for more than a few seconds' patience is an answer of its own (exit 2).
 */
export const LOOKUP_RETRY: Partial<RetryPolicy> = { maxAttempts: 3, timeoutMs: 5_000, maxRetryAfterSeconds: 5 };

/** Exit statuses of the lookups, for dial plans and scripts (docs/cli.md). */
export const FOUND = 0;
export const NOT_FOUND = 1;

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
  if (!answer.found) return { json: answer, text: terminalText`${answer.phone_number}  not seen  ${answer.message}`, exitCode: NOT_FOUND };
  const lines = [
    terminalText`${answer.phone_number}  SEEN  ${answer.message}`,
    terminalText`  score             ${answer.score}: ${answer.reasons.join('; ')}`,
    terminalText`  first seen        ${answer.first_seen}`,
    terminalText`  last seen         ${answer.last_seen}`,
    terminalText`  source addresses  ${answer.source_ip_count}`,
    terminalText`  SIP methods       ${counts(answer.sip_methods)}`,
    terminalText`  written as        ${answer.matched_forms.join(', ')}`,
  ];
  if (answer.e164) lines.push(terminalText`  E.164             ${answer.e164}${answer.country ? ` (${answer.country}${answer.number_type ? `, ${answer.number_type}` : ''})` : ''}`);
  return { json: answer, text: lines.join('\n'), exitCode: FOUND };
}

function rangeOutput(answer: RangeLookup): CommandOutput {
  if (!answer.found) return { json: answer, text: terminalText`${answer.key}  not seen  (asked privately, by hash prefix)`, exitCode: NOT_FOUND };
  return {
    json: answer,
    text: terminalText`${answer.key}  SEEN  ${answer.seen_count} time${answer.seen_count === 1 ? '' : 's'}, score ${answer.score} (asked privately, by hash prefix)`,
    exitCode: FOUND,
  };
}

function ipAddressOutput(answer: IpAddressLookup): CommandOutput {
  if (!answer.found) return { json: answer, text: terminalText`${answer.ip_address}  not seen  ${answer.message}`, exitCode: NOT_FOUND };
  const lines = [
    terminalText`${answer.ip_address}  SEEN  ${answer.message}`,
    terminalText`  score             ${answer.score}: ${answer.reasons.join('; ')}`,
    terminalText`  first seen        ${answer.first_seen}`,
    terminalText`  last seen         ${answer.last_seen}`,
    terminalText`  numbers dialled   ${answer.called_number_count}`,
    terminalText`  transports        ${counts(answer.transports)}`,
    terminalText`  user agents       ${answer.user_agents.map((u) => `${u.user_agent || '(none)'} ${u.count}`).join(', ')}`,
  ];
  return { json: answer, text: lines.join('\n'), exitCode: FOUND };
}

/** `INVITE 3, OPTIONS 1`, most first. */
function counts(byName: Record<string, number | undefined>): string {
  return Object.entries(byName)
    .sort(([, a], [, b]) => (b ?? 0) - (a ?? 0))
    .map(([name, n]) => `${name} ${n ?? 0}`)
    .join(', ');
}

import type { Command } from 'commander';
import type { RetryPolicy, Tollwatch } from '../../sdk/src/index.ts';
import type { Services } from '../services.ts';

/** What a command prints: one JSON object with --json, readable lines otherwise; and its exit status, 0 unless given. */
export interface CommandOutput {
  json: object;
  text: string;
  exitCode?: number;
}

/** Turns a command's work into a commander action: the services are opened on first use and the output kept for printing. */
export type Run = <A extends unknown[]>(
  action: (s: Services, ...args: A) => Promise<CommandOutput>,
) => (...args: A) => Promise<void>;

/** What a user command works with: the API of a running server, never a store. */
export interface RemoteContext {
  /** An SDK client from TOLLWATCH_URL and the client's credentials, retrying as the command needs. */
  client(retry?: Partial<RetryPolicy>): Tollwatch;
  /** Standard input, for `submit -`. */
  stdin: NodeJS.ReadableStream;
  /** Standard error: reports while a long command runs (`ship`), and its progress line when it is a terminal. */
  stderr: NodeJS.WritableStream;
}

/** Turns a user command's work into a commander action; its failures exit 2. */
export type RunRemote = <A extends unknown[]>(
  action: (c: RemoteContext, ...args: A) => Promise<CommandOutput>,
) => (...args: A) => Promise<void>;

/** What a command that needs neither a store nor a server works with: the environment it was run in. */
export interface LocalContext {
  env: Record<string, string | undefined>;
}

/** Turns the work of a command that needs neither a store nor a server (it writes text) into a commander action. */
export type RunLocal = <A extends unknown[]>(action: (c: LocalContext, ...args: A) => Promise<CommandOutput>) => (...args: A) => Promise<void>;

/**
 * Adds one group of commands to the program: operator commands use `run`, user commands
 * `runRemote`, commands that only print what they are given `runLocal`; `stderr` takes what a
 * long command reports while it runs (its progress line).
 */
export type CommandGroup = (program: Command, run: Run, runRemote: RunRemote, stderr: NodeJS.WritableStream, runLocal: RunLocal) => void;

import type { Command } from 'commander';
import type { Services } from '../services.ts';

/** What a command prints: one JSON object with --json, readable lines otherwise. */
export interface CommandOutput {
  json: object;
  text: string;
}

/** Turns a command's work into a commander action: the services are opened on first use and the output kept for printing. */
export type Run = <A extends unknown[]>(
  action: (s: Services, ...args: A) => Promise<CommandOutput>,
) => (...args: A) => Promise<void>;

/** Adds one group of commands to the program. */
export type CommandGroup = (program: Command, run: Run) => void;

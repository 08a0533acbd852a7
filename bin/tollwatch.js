#!/usr/bin/env node
// Runs on Node 24's own TypeScript support: no build step between the source and the operator.
import { runCli } from '../src/cli/main.ts';

process.exitCode = await runCli(process.argv.slice(2));

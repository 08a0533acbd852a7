import { spawn } from 'node:child_process';

/** What a command left: its exit status and its two streams. */
export interface CommandRun {
  status: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs a command asynchronously, as a user would from a shell: for tests whose server, serving
 * in the test's own process, must keep answering while it runs. Killed after `timeoutMs`, so a
 * hung command fails its test rather than the run.
 */
export function runCommand(command: string, args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv; input?: string; timeoutMs?: number } = {}): Promise<CommandRun> {
  return new Promise((resolve, reject) => {
    // spawn's own timeout kills a hung command; its status is then null, which no test expects.
    const child = spawn(command, args, { cwd: options.cwd, env: options.env ?? process.env, stdio: ['pipe', 'pipe', 'pipe'], timeout: options.timeoutMs ?? 120_000, killSignal: 'SIGKILL' });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (s: string) => (stdout += s));
    child.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stdout, stderr }));
    child.stdin.on('error', () => {});
    child.stdin.end(options.input ?? '');
  });
}

import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sampleEvent, startHarness, type Harness, type TestAccount } from '../support/harness.ts';
import { runCommand, type CommandRun } from '../support/run-command.ts';

const ROOT = new URL('../../', import.meta.url).pathname;
const TSC = join(ROOT, 'node_modules/typescript/bin/tsc');
/** The oldest TypeScript the SDK's declarations are tried with: the one that still has `moduleResolution: node`. */
const OLD_TYPESCRIPT = 'typescript@5.4.5';

/**
 * The Node versions the packages claim (`engines`: 20 and later): the system's Node where it is
 * 20 (Debian's, as on the CI machine), and the project's own 24. A machine without a Node 20
 * tries 24 alone, unless CI is set, where that is a failure.
 */
function nodes(): Array<{ name: string; path: string }> {
  const found = [{ name: 'Node 24', path: process.execPath }];
  try {
    const system = execFileSync('/usr/bin/node', ['--version'], { encoding: 'utf8' }).trim();
    if (system.startsWith('v20.')) found.unshift({ name: `Node ${system}`, path: '/usr/bin/node' });
  } catch {
    // No system Node.
  }
  if (found.length === 1 && process.env.CI) throw new Error('no Node 20 at /usr/bin/node: the packages claim it');
  return found;
}

/** A program using the SDK as its users do: one lookup, bounded, its answer as JSON. */
const PROGRAM = (load: string) => `${load}
const [url, clientId, clientSecret, number] = process.argv.slice(2);
const client = new Tollwatch({ baseUrl: url, clientId, clientSecret });
client.lookupPhoneNumber(number, { deadlineMs: 30000 }).then((answer) => {
  console.log(JSON.stringify({ found: answer.found, score: answer.found ? answer.score : null, errors: typeof DeadlineExceededError }));
});
`;

/** The same in TypeScript under strict: the answer narrowed by `found`, as the declarations allow. */
const TYPED_PROGRAM = (load: string) => `${load}
declare const process: { argv: string[] };
const [url, clientId, clientSecret, number] = process.argv.slice(2) as [string, string, string, string];
const client = new Tollwatch({ baseUrl: url, clientId, clientSecret });
const options: CallOptions = { deadlineMs: 30000 };
client.lookupPhoneNumber(number, options).then((answer: PhoneNumberLookup) => {
  const score: number | null = answer.found ? answer.score : null;
  console.log(JSON.stringify({ found: answer.found, score, errors: typeof DeadlineExceededError }));
});
`;

/**
 * The packages as published (docs/clients.md): `npm pack` of the SDK from a copy of sdk/ alone
 * (nothing installed there first), and of the CLI; both installed into a fresh project and used
 * from ES modules, CommonJS, strict TypeScript compiled either way (the oldest TypeScript with
 * `moduleResolution: node` too), and the CLI's executable, on each Node the packages claim.
 */
describe('the SDK and CLI packages, installed from their tarballs', () => {
  let h: Harness;
  let who: TestAccount;
  let work: string;
  let project: string;

  const run = async (command: string, args: string[], cwd = project, env: NodeJS.ProcessEnv = process.env): Promise<CommandRun> => {
    const result = await runCommand(command, args, { cwd, env, timeoutMs: 300_000 });
    if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} exited ${result.status}:\n${result.stdout}\n${result.stderr}`);
    return result;
  };

  beforeAll(async () => {
    h = await startHarness();
    who = await h.account();
    const res = await who.api('/api/events', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(sampleEvent({ called_number: '+46812118532' })) });
    expect(res.status).toBe(201);
    await h.settled();

    work = mkdtempSync(join(tmpdir(), 'tollwatch-packages-'));
    // sdk/ alone, as a checkout of it holds it: the tracked files and no node_modules or dist.
    const alone = join(work, 'sdk');
    const tracked = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', 'sdk'], { cwd: ROOT, encoding: 'utf8' }).split('\n').filter(Boolean);
    for (const file of tracked) {
      mkdirSync(dirname(join(work, file)), { recursive: true });
      cpSync(join(ROOT, file), join(work, file));
    }
    await run('npm', ['pack', '--pack-destination', work], alone);
    await run('npm', ['pack', '--pack-destination', work], join(ROOT, 'cli'));

    project = join(work, 'project');
    mkdirSync(project);
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
    const tarballs = readdirSync(work).filter((f) => f.endsWith('.tgz')).map((f) => join(work, f));
    expect(tarballs.map((t) => t.slice(work.length + 1)).sort()).toEqual(['tollwatch-cli-0.1.0.tgz', 'tollwatch-sdk-0.1.0.tgz']);
    await run('npm', ['install', '--no-audit', '--no-fund', ...tarballs, `old-typescript@npm:${OLD_TYPESCRIPT}`]);

    writeFileSync(join(project, 'esm.mjs'), PROGRAM("import { DeadlineExceededError, Tollwatch } from '@tollwatch/sdk';"));
    writeFileSync(join(project, 'cjs.cjs'), PROGRAM("const { DeadlineExceededError, Tollwatch } = require('@tollwatch/sdk');"));
    const typedImport = "import { DeadlineExceededError, Tollwatch, type CallOptions, type PhoneNumberLookup } from '@tollwatch/sdk';";
    writeFileSync(join(project, 'typed.ts'), TYPED_PROGRAM(typedImport));
    writeFileSync(join(project, 'typed-cjs.cts'), TYPED_PROGRAM(typedImport));
    const strict = { strict: true, skipLibCheck: false, target: 'es2022', lib: ['es2022', 'dom'], types: [] };
    writeFileSync(join(project, 'tsconfig.esm.json'), JSON.stringify({ compilerOptions: { ...strict, module: 'nodenext', moduleResolution: 'nodenext', outDir: 'out' }, files: ['typed.ts', 'typed-cjs.cts'] }));
    await run(process.execPath, [TSC, '-p', 'tsconfig.esm.json']);
    // TypeScript 5.4 compiling to CommonJS with the resolution it was once the default: `types` at the top.
    mkdirSync(join(project, 'legacy'));
    writeFileSync(join(project, 'legacy/package.json'), JSON.stringify({ type: 'commonjs' }));
    writeFileSync(join(project, 'legacy/typed.ts'), TYPED_PROGRAM(typedImport.replace(/type /g, '')));
    writeFileSync(join(project, 'legacy/tsconfig.json'), JSON.stringify({ compilerOptions: { ...strict, module: 'commonjs', moduleResolution: 'node', outDir: 'out' }, files: ['typed.ts'] }));
    await run(process.execPath, [join(project, 'node_modules/old-typescript/bin/tsc'), '-p', 'legacy/tsconfig.json']);
  });
  afterAll(async () => {
    if (work) rmSync(work, { recursive: true, force: true });
    await h?.close();
  });

  for (const node of nodes()) {
    it(`on ${node.name}: the SDK from ES modules, CommonJS and strict TypeScript compiled to either`, async () => {
      for (const program of ['esm.mjs', 'cjs.cjs', 'out/typed.js', 'out/typed-cjs.cjs', 'legacy/out/typed.js']) {
        const result = await run(node.path, [program, h.url, who.clientId, who.clientSecret, '0046812118532']);
        expect(JSON.parse(result.stdout), program).toMatchObject({ found: true, score: expect.any(Number), errors: 'function' });
      }
    });

    it(`on ${node.name}: the CLI's executable, set up and looking a number up`, async () => {
      const home = join(work, `home-${node.name.replace(/\W/g, '')}`);
      const env: NodeJS.ProcessEnv = { ...process.env, TOLLWATCH_CONFIG_DIR: home, PATH: `${dirname(node.path)}:${process.env.PATH}` };
      for (const name of Object.keys(env)) if (/^TOLLWATCH_(URL|CLIENT_ID|CLIENT_SECRET|AUDIENCE)$/.test(name)) delete env[name];
      const bin = join(project, 'node_modules/.bin/tollwatch-cli');
      expect((await run(bin, ['--version'], project, env)).stdout.trim()).toBe('tollwatch-cli 0.1.0');
      const setup = await runCommand(bin, ['setup', '--url', h.url, '--client-id', who.clientId], { cwd: project, env, input: `${who.clientSecret}\n` });
      expect(setup).toMatchObject({ status: 0, stderr: '' });
      const lookup = await runCommand(bin, ['lookup', '--json', '+46812118532'], { cwd: project, env });
      expect(lookup).toMatchObject({ status: 0, stderr: '' });
      expect(JSON.parse(lookup.stdout)).toMatchObject({ phone_number: '+46812118532', found: true });
      expect(existsSync(join(home, 'tokens'))).toBe(true);
      // firewall sync's script, which --dry-run prints without running nft (cli/README.md).
      const script = await runCommand(bin, ['firewall', 'sync', '--dry-run', '--min-score', '1'], { cwd: project, env });
      expect(script).toMatchObject({ status: 0, stderr: '' });
      expect(script.stdout).toMatch(/^# tollwatch-cli firewall sync: 1 IPv4 and 0 IPv6 addresses, one transaction\n[\s\S]*\n {2}203\.0\.113\.7 timeout \d+s\n\}\n$/);
    });
  }
});

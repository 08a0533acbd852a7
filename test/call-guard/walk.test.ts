import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { callPathMissing, scratchDir } from '../support/call-path.ts';

/**
 * docs/call-guard.md's walk ("From a fresh install to refused calls"), its commands taken from
 * the markdown and run as written, in order, in one shell: a block whose first line ends with
 * `# in another terminal` runs in the background, as in another terminal, until the walk ends.
 * The walk names fixed ports, /etc/kamailio and Kamailio's control socket, so it runs in a
 * network and mount namespace of its own (root, as in CI): its loopback, and an empty
 * /etc/kamailio and /run/kamailio, are its alone. Only the store is its own too (DATABASE_URL):
 * the checkout's ./data is left alone. Skipped where Kamailio or SIPp is missing, unless
 * TOLLWATCH_REQUIRE_CALL_PATH=1 (CI).
 */
const ROOT = new URL('../..', import.meta.url).pathname;
const DOC = readFileSync(join(ROOT, 'docs/call-guard.md'), 'utf8');
const missing = callPathMissing() ?? (process.getuid?.() === 0 ? undefined : 'the walk runs as root');
if (process.env.TOLLWATCH_REQUIRE_CALL_PATH === '1' && missing) {
  it('has Kamailio, SIPp and root to follow the call guard walk with', () => expect(missing).toBeUndefined());
}

interface Block {
  code: string;
  background: boolean;
}

/** The walk's section of the document. */
function walkSection(): string {
  const start = DOC.indexOf('## From a fresh install to refused calls');
  const end = DOC.indexOf('\n## ', start + 3);
  return DOC.slice(start, end);
}

/** Its `sh` blocks, in order, unindented. */
export function walkBlocks(section = walkSection()): Block[] {
  return [...section.matchAll(/^( *)```sh\n([\s\S]*?)^\1```$/gm)].map((m) => {
    const code = m[2]!
      .split('\n')
      .map((line) => line.slice(m[1]!.length))
      .join('\n')
      .trimEnd();
    return { code, background: /# in another terminal$/.test(code.split('\n')[0]!) };
  });
}

/** The lines the walk shows as what its last command prints (the plain block after its last `sh` one), less `…`. */
function shownOutput(section = walkSection()): string[] {
  const after = section.slice(section.lastIndexOf('```sh'));
  const block = /^( *)```\n([\s\S]*?)^\1```$/m.exec(after.slice(after.indexOf('```', 5) + 3));
  return (block?.[2] ?? '')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && line !== '…');
}

describe.skipIf(missing !== undefined)('the call guard walk in docs/call-guard.md, followed literally', () => {
  const dir = scratchDir('guard-walk');
  afterAll(() => dir?.remove());

  it('has commands to follow: the packages, Tollwatch, the fleet, the guard, Kamailio, the PBX and calls', () => {
    const blocks = walkBlocks();
    expect(blocks.filter((b) => b.background).map((b) => b.code.split(' ')[0])).toEqual(['npm', 'kamailio', 'sipp']);
    expect(blocks.at(-1)!.code).toContain('kamcmd');
    expect(shownOutput()).toContain('script:tollwatch:refused = 10');
  });

  it('ends with the probed number’s calls refused and the others let through, as the doc shows', { timeout: 300_000 }, async () => {
    const blocks = walkBlocks();
    const lines = ['set -u', 'ip link set lo up', 'mkdir -p /run/kamailio /etc/kamailio', 'mount -t tmpfs tmpfs /run/kamailio', 'mount -t tmpfs tmpfs /etc/kamailio', `cd ${JSON.stringify(ROOT)}`, 'groups=""'];
    blocks.forEach((block, i) => {
      const file = join(dir.path, `block-${i}.sh`);
      writeFileSync(file, `${block.code}\n`);
      if (block.background) {
        // Its own process group, so that the walk's end stops it and everything it started.
        lines.push(`setsid bash ${JSON.stringify(file)} > ${JSON.stringify(join(dir.path, `block-${i}.log`))} 2>&1 &`, 'groups="$groups $!"');
      } else {
        lines.push(`echo "::block ${i}"`, `. ${JSON.stringify(file)}`, `echo "::status ${i} $?"`);
      }
    });
    lines.push('for group in $groups; do kill -TERM -- "-$group" 2>/dev/null; done', 'sleep 2', 'for group in $groups; do kill -KILL -- "-$group" 2>/dev/null; done', 'echo "::end"');
    const script = join(dir.path, 'walk.sh');
    writeFileSync(script, `${lines.join('\n')}\n`);
    const env = { ...process.env, DATABASE_URL: `sqlite:${join(dir.path, 'tollwatch.db')}` };
    delete (env as Record<string, string | undefined>).TOLLWATCH_CLIENT_ID;
    delete (env as Record<string, string | undefined>).TOLLWATCH_CLIENT_SECRET;
    const child = spawn('unshare', ['--net', '--mount', '--fork', 'bash', script], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (s: string) => (stdout += s));
    child.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
    const timer = setTimeout(() => child.kill('SIGKILL'), 280_000);
    await new Promise((resolve) => child.once('close', resolve));
    clearTimeout(timer);
    const logs = blocks.map((_, i) => {
      try {
        return readFileSync(join(dir.path, `block-${i}.log`), 'utf8');
      } catch {
        return '';
      }
    });
    const report = `stdout:\n${stdout}\nstderr:\n${stderr.slice(-3000)}\nbackground logs:\n${logs.map((l) => l.slice(-1500)).join('\n----\n')}`;
    expect(stdout, report).toContain('::end');
    const last = stdout.slice(stdout.lastIndexOf(`::block ${blocks.length - 1}`));
    for (const line of shownOutput()) expect(last, `${line}\n${report}`).toContain(line);
    const kamailio = logs[blocks.findIndex((b) => b.code.startsWith('kamailio'))]!;
    expect(kamailio, report).toMatch(/tollwatch: decision=refused number=0046812118532 source=127\.0\.0\.1 score=6\d ms=[\d.]+ via=lookup call-id=\S+ outcome=""/);
    expect(kamailio.match(/decision=refused/g)).toHaveLength(10);
  });
});

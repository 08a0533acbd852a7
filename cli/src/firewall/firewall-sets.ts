import { spawn } from 'node:child_process';

/** The two formats the sets can be kept in (docs/clients.md, "Blocklists in the firewall"). */
export const BACKENDS = ['nft', 'ipset'] as const;
export type Backend = (typeof BACKENDS)[number];

/** nftables' table families that can hold the sets. */
export const NFT_FAMILIES = ['inet', 'ip', 'ip6', 'bridge', 'netdev', 'arp'] as const;

/** Where the addresses go: a table of nftables (or none, for ipset) and one set per IP version. */
export interface SetTarget {
  backend: Backend;
  /** nftables only: the table's family and name. */
  family: string;
  table: string;
  v4: string;
  v6: string;
}

/** One address for a set, with the seconds until it should leave it (none: it stays until the next sync). */
export interface SetElement {
  address: string;
  timeoutSeconds?: number | undefined;
}

/** The addresses to hold, by version. */
export interface SetContents {
  v4: readonly SetElement[];
  v6: readonly SetElement[];
}

/**
 * The longest timeout an ipset element takes (the kernel counts it in milliseconds in 32 bits):
 * about 24.8 days. A longer one is cut to it; every sync after the hour turns sets it again.
 */
export const IPSET_MAX_TIMEOUT = 2_147_483;

/** The feed holds at most 100,000 addresses (docs/api.md §14): room for all of them in one ipset. */
const IPSET_MAXELEM = 131_072;

/** Elements a statement of the nft script carries: one statement of 100,000 is slower to parse for nothing. */
const NFT_ELEMENTS_PER_STATEMENT = 1_000;

/** The name the ipset backend fills before swapping it in. */
export function ipsetTemporaryName(name: string): string {
  return `${name}-new`;
}

/** The script that makes the sets hold exactly `contents`, for `nft -f` or `ipset restore`. */
export function setScript(target: SetTarget, contents: SetContents): string {
  return target.backend === 'nft' ? nftScript(target, contents) : ipsetScript(target, contents);
}

/**
 * One `nft -f` script, which nftables applies as one transaction: the table and both sets are
 * created if missing (`add` leaves existing ones, and the rules that use them, alone), flushed and
 * refilled. A packet sees the old contents or the new, never an empty set; if any line fails,
 * nothing changes. The sets carry `flags timeout`, so an element can leave on its own.
 */
function nftScript({ family, table, v4, v6 }: SetTarget, contents: SetContents): string {
  const at = `${family} ${table}`;
  const lines = [
    `# tollwatch-cli firewall sync: ${contents.v4.length} IPv4 and ${contents.v6.length} IPv6 addresses, one transaction`,
    `add table ${at}`,
    `add set ${at} ${v4} { type ipv4_addr; flags timeout; }`,
    `add set ${at} ${v6} { type ipv6_addr; flags timeout; }`,
    `flush set ${at} ${v4}`,
    `flush set ${at} ${v6}`,
  ];
  for (const [name, elements] of [
    [v4, contents.v4],
    [v6, contents.v6],
  ] as const) {
    for (let start = 0; start < elements.length; start += NFT_ELEMENTS_PER_STATEMENT) {
      const chunk = elements.slice(start, start + NFT_ELEMENTS_PER_STATEMENT);
      lines.push(`add element ${at} ${name} {`, chunk.map((e) => `  ${e.address}${e.timeoutSeconds === undefined ? '' : ` timeout ${e.timeoutSeconds}s`}`).join(',\n'), '}');
    }
  }
  return `${lines.join('\n')}\n`;
}

/**
 * An `ipset restore` script: each set is filled under a temporary name, then swapped with the
 * live one (the kernel exchanges them at once, and rules that name the set follow the name), and
 * the old contents destroyed. Both are filled before either is swapped, so a failure while filling
 * leaves both live sets as they were. `timeout 0` at creation lets elements carry a timeout; an
 * element given none stays until the next sync.
 */
function ipsetScript({ v4, v6 }: SetTarget, contents: SetContents): string {
  const lines = [`# tollwatch-cli firewall sync: ${contents.v4.length} IPv4 and ${contents.v6.length} IPv6 addresses, filled aside then swapped in`];
  const sets = [
    { name: v4, family: 'inet', elements: contents.v4 },
    { name: v6, family: 'inet6', elements: contents.v6 },
  ];
  for (const { name, family, elements } of sets) {
    const create = `hash:ip family ${family} maxelem ${IPSET_MAXELEM} timeout 0`;
    const temporary = ipsetTemporaryName(name);
    lines.push(`create ${name} ${create}`, `create ${temporary} ${create}`, `flush ${temporary}`);
    for (const e of elements) lines.push(`add ${temporary} ${e.address}${e.timeoutSeconds === undefined ? '' : ` timeout ${Math.min(e.timeoutSeconds, IPSET_MAX_TIMEOUT)}`}`);
  }
  for (const { name } of sets) lines.push(`swap ${ipsetTemporaryName(name)} ${name}`);
  for (const { name } of sets) lines.push(`destroy ${ipsetTemporaryName(name)}`);
  return `${lines.join('\n')}\n`;
}

/** Applies a script made by setScript: `nft -f -`, or `ipset -exist restore`. Throws with the tool's own words when it fails. */
export async function applyScript(backend: Backend, script: string): Promise<void> {
  const args = backend === 'nft' ? ['-f', '-'] : ['-exist', 'restore'];
  const run = await runTool(backend, args, script);
  if (run.status !== 0) throw new Error(`${backend} ${args.join(' ')} failed${run.status === null ? '' : ` (exit ${run.status})`}: ${firstLines(run.stderr || run.stdout)}`);
}

/**
 * Whether both sets exist as the last sync left them. A firewall reloaded since (`nft flush
 * ruleset` in /etc/nftables.conf, a reboot) has lost them, and then a 304 must not be trusted.
 */
export async function setsExist(target: SetTarget): Promise<boolean> {
  if (target.backend === 'nft') {
    // The family's sets, terse: nft reads no element for it (`list table`, even terse, reads them
    // all, about 2 s for 100,000 on a loaded machine, where this takes a few milliseconds).
    const run = await runTool('nft', ['-t', '-j', 'list', 'sets', target.family]);
    if (run.status !== 0) return false;
    try {
      const listed = (JSON.parse(run.stdout) as { nftables?: Array<{ set?: { name?: string; table?: string } }> }).nftables ?? [];
      const names = new Set(listed.filter((item) => item.set?.table === target.table).map((item) => item.set?.name));
      return names.has(target.v4) && names.has(target.v6);
    } catch {
      return false;
    }
  }
  const run = await runTool('ipset', ['list', '-n']);
  const names = new Set(run.stdout.split('\n'));
  return run.status === 0 && names.has(target.v4) && names.has(target.v6);
}

interface ToolRun {
  status: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs nft or ipset with `input` on standard input. They live in /usr/sbin, which a user's PATH
 * (a cron job's) may lack, so it is searched after PATH.
 */
function runTool(tool: Backend, args: string[], input = ''): Promise<ToolRun> {
  const path = [process.env.PATH ?? '', '/usr/sbin', '/sbin'].filter(Boolean).join(':');
  return new Promise((resolve, reject) => {
    const child = spawn(tool, args, { env: { ...process.env, PATH: path }, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (s: string) => (stdout += s));
    child.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
    child.on('error', (err: NodeJS.ErrnoException) => reject(err.code === 'ENOENT' ? new Error(`${tool} is not installed (Debian package ${tool === 'nft' ? 'nftables' : 'ipset'})`) : err));
    child.on('close', (status) => resolve({ status, stdout, stderr }));
    child.stdin.on('error', () => {});
    child.stdin.end(input);
  });
}

/** A tool's complaint, short enough for one message: its first lines. */
function firstLines(text: string): string {
  return text.trim().split('\n').slice(0, 6).join(' | ') || 'no message';
}

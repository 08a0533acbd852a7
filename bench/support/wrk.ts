import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * The load generator of the benchmark, the soak and the profiler: wrk, a C program, one thread.
 * A load generator written in JavaScript, on the server's own two cores, was the limit of the
 * bare node:http baseline it was compared with, so every ratio against it came out too high.
 *
 * Each load is a generated Lua script: `request()` builds the request (paths from a list, random
 * not-found numbers, unique event bodies), `response()` counts answers by status, and `done()`
 * prints one JSON line that `runWrk` reads back.
 */

/** What one wrk run measured. Latencies in milliseconds. */
export interface WrkResult {
  requests: number;
  seconds: number;
  mean: number;
  p50: number;
  p99: number;
  /** Connect, read, write errors and timeouts together. */
  errors: number;
  statuses: Record<string, number>;
  /** Requests by the kinds a script counted, if it counts any. */
  kinds: Record<string, number>;
}

/** Refuses to go on without wrk: the benchmark installs nothing itself. */
export function requireWrk(): void {
  const probe = spawnSync('wrk', ['-v'], { encoding: 'utf8' });
  if (probe.error) {
    process.stderr.write('wrk is not installed: the benchmark drives every load with it.\nInstall it (Debian/Ubuntu: apt-get install wrk; macOS: brew install wrk) and run again.\n');
    process.exit(2);
  }
}

/** A Lua string literal of any text. */
export function luaString(text: string): string {
  return `"${text.replace(/[\\"]/g, '\\$&').replace(/\r/g, '\\r').replace(/\n/g, '\\n')}"`;
}

/** A Lua array of strings. */
export function luaList(values: readonly string[]): string {
  return `{${values.map(luaString).join(',')}}`;
}

/**
 * The counting and reporting half of every script; `body` defines `request()` (and may define
 * `init()`). The bearer token is on every request, baselines included: its 600 bytes cost the
 * server's HTTP parser too.
 */
export function wrkScript(token: string, body: string): string {
  return `
wrk.headers["Authorization"] = ${luaString(`Bearer ${token}`)}
local threads = {}
function setup(thread) table.insert(threads, thread) end
statuses = {}
-- What a script's request() sent, by a name of its choosing (kinds[name] = (kinds[name] or 0) + 1).
kinds = {}
function response(status, headers, body) statuses[status] = (statuses[status] or 0) + 1 end
${body}
local function counts(name)
  local sums, parts = {}, {}
  for _, thread in ipairs(threads) do
    for key, n in pairs(thread:get(name)) do sums[key] = (sums[key] or 0) + n end
  end
  for key, n in pairs(sums) do table.insert(parts, string.format('"%s":%d', key, n)) end
  return "{" .. table.concat(parts, ",") .. "}"
end
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('WRK-RESULT {"requests":%d,"micros":%d,"mean":%.1f,"p50":%d,"p99":%d,"errors":%d,"statuses":%s,"kinds":%s}\\n',
    summary.requests, summary.duration, latency.mean, latency:percentile(50), latency:percentile(99),
    e.connect + e.read + e.write + e.timeout, counts("statuses"), counts("kinds")))
end`;
}

/** Lua that seeds each thread's random numbers apart, and gives a v4 UUID and an event time. */
export const LUA_EVENT_HELPERS = `
function init(args) math.randomseed(os.time() + os.clock() * 1e6) end
local function hex(n) return string.format("%0" .. n .. "x", math.random(0, 16 ^ n - 1)) end
function uuid()
  return hex(8) .. "-" .. hex(4) .. "-4" .. hex(3) .. "-" .. string.format("%x", math.random(8, 11)) .. hex(3) .. "-" .. hex(6) .. hex(6)
end
function eventTime() return os.date("!%Y-%m-%d %H:%M:%S") .. string.format(".%06d", math.random(0, 999999)) end
`;

const dir = mkdtempSync(join(tmpdir(), 'tollwatch-wrk-'));
let scripts = 0;

/** Runs wrk with one thread against `url` and returns what the script's done() reported. */
export async function runWrk(url: string, script: string, connections: number, seconds: number): Promise<WrkResult> {
  const file = join(dir, `load-${++scripts}.lua`);
  writeFileSync(file, script);
  const child = spawn('wrk', ['-t1', `-c${connections}`, `-d${seconds}s`, '--timeout', '10s', '-s', file, url], { stdio: ['ignore', 'pipe', 'inherit'] });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
  const line = output.split('\n').find((l) => l.startsWith('WRK-RESULT '));
  if (code !== 0 || !line) throw new Error(`wrk exited with ${code}:\n${output}`);
  const raw = JSON.parse(line.slice('WRK-RESULT '.length)) as Omit<WrkResult, 'seconds'> & { micros: number };
  return {
    requests: raw.requests,
    seconds: raw.micros / 1e6,
    mean: Number((raw.mean / 1000).toFixed(2)),
    p50: Number((raw.p50 / 1000).toFixed(2)),
    p99: Number((raw.p99 / 1000).toFixed(2)),
    errors: raw.errors,
    statuses: raw.statuses,
    kinds: raw.kinds,
  };
}

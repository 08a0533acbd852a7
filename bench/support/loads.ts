import { benchEventFields } from './support.ts';
import { LUA_EVENT_HELPERS, luaList, luaString, wrkScript } from './wrk.ts';

/** The wrk scripts of the benchmark's loads (wrk.ts): which requests each sends. */

/** GET of a path picked at random from `paths` (known numbers: lookups that find something). */
export function pathsLoad(token: string, paths: readonly string[]): string {
  return wrkScript(
    token,
    `
${LUA_EVENT_HELPERS}
local paths = ${luaList(paths)}
function request() return wrk.format("GET", paths[math.random(#paths)]) end
`,
  );
}

/** GET of a random number under a prefix no generated store holds: lookups answered 404. */
export function notFoundLoad(token: string): string {
  return wrkScript(
    token,
    `
${LUA_EVENT_HELPERS}
function request() return wrk.format("GET", "/api/phone-numbers/%2B999" .. math.random(100000000, 999999999)) end
`,
  );
}

/**
 * A Lua expression of one event's JSON, unique per call: a fresh UUID and time, a number picked
 * from `numbers`, a random source address.
 */
function luaEventExpression(): string {
  const template = JSON.stringify(benchEventFields({ event_uuid: '@uuid@', event_timestamp: '@time@', called_number: '@number@', source_ip: '198.51.100.@ip@' }));
  const values: Record<string, string> = { uuid: 'uuid()', time: 'eventTime()', number: 'numbers[math.random(#numbers)]', ip: 'math.random(0, 249)' };
  return template
    .split(/@(\w+)@/)
    .map((part, i) => (i % 2 ? values[part]! : luaString(part)))
    .join(' .. ');
}

/**
 * POST /api/events of one new event per request; `numbers` are written as the honeypot saw them.
 * With `perSecond`, requests are paced to that rate instead of flat out (PACED_DELAY).
 */
export function singleEventLoad(token: string, numbers: readonly string[], perSecond?: number): string {
  return wrkScript(
    token,
    `
${LUA_EVENT_HELPERS}
local numbers = ${luaList(numbers)}
wrk.headers["Content-Type"] = "application/json"
function request() return wrk.format("POST", "/api/events", nil, ${luaEventExpression()}) end
${perSecond === undefined ? '' : PACED_DELAY(perSecond)}
`,
  );
}

/**
 * wrk's `delay()` (how long a connection waits before its next request) pacing all of a
 * thread's connections to `perSecond` together: each request takes the next free slot, one
 * every 1000 / perSecond ms, read off the monotonic clock (LuaJIT's FFI; wrk's Lua has no clock
 * of its own). After a stall (a slow fsync) the slots missed in its last CATCH_UP_MS are taken
 * at once, and older ones are dropped: the mean stays near the rate without a burst of a whole
 * stall's requests. It holds while the connections can carry the rate (connections × 1000 / latency).
 */
const PACED_DELAY = (perSecond: number) => `
local ffi = require("ffi")
ffi.cdef[[ typedef struct { long tv_sec; long tv_nsec; } paced_timespec; int clock_gettime(int, paced_timespec *); ]]
local clock = ffi.new("paced_timespec")
local function now_ms() ffi.C.clock_gettime(1, clock); return tonumber(clock.tv_sec) * 1000 + tonumber(clock.tv_nsec) / 1e6 end
local interval_ms = ${1000 / perSecond}
local next_slot = 0
function delay()
  local now = now_ms()
  local slot = math.max(next_slot, now - ${CATCH_UP_MS})
  next_slot = slot + interval_ms
  return math.max(0, math.floor(slot - now))
end
`;
const CATCH_UP_MS = 250;

/** POST /api/events/batch of `size` new events per request. */
export function batchLoad(token: string, numbers: readonly string[], size: number): string {
  return wrkScript(
    token,
    `
${LUA_EVENT_HELPERS}
local numbers = ${luaList(numbers)}
wrk.headers["Content-Type"] = "application/json"
function request()
  local events = {}
  for i = 1, ${size} do events[i] = ${luaEventExpression()} end
  return wrk.format("POST", "/api/events/batch", nil, "[" .. table.concat(events, ",") .. "]")
end
`,
  );
}

/**
 * The soak's mixed load: 60% number lookups (`numbers`), 20% address lookups, 19% single
 * events, 1% token requests (with `tokenBody`, and no bearer token), each counted by kind.
 */
export function mixedLoad(token: string, tokenBody: string, numbers: readonly string[]): string {
  return wrkScript(
    token,
    `
${LUA_EVENT_HELPERS}
local numbers = ${luaList(numbers)}
local paths = {}
for i, n in ipairs(numbers) do paths[i] = "/api/phone-numbers/" .. n:gsub("%+", "%%2B") end
local bearer = wrk.headers["Authorization"]
local function count(kind) kinds[kind] = (kinds[kind] or 0) + 1 end
function request()
  local roll = math.random()
  if roll < 0.01 then
    count("token")
    return wrk.format("POST", "/oauth/token", { ["Content-Type"] = "application/json" }, ${luaString(tokenBody)})
  elseif roll < 0.61 then
    count("lookup")
    return wrk.format("GET", paths[math.random(#paths)])
  elseif roll < 0.81 then
    count("address")
    return wrk.format("GET", "/api/ip-addresses/198.51.100." .. math.random(0, 249))
  end
  count("submit")
  return wrk.format("POST", "/api/events", { ["Authorization"] = bearer, ["Content-Type"] = "application/json" }, ${luaEventExpression()})
end
`,
  );
}

import { readdirSync, readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { poolNumber } from '../support/generate-events.ts';
import { batchLoad, singleEventLoad } from '../support/loads.ts';
import { cpuMicros, log, prepareStore, startProcess, tokenFor } from '../support/support.ts';
import { requireWrk, runWrk } from '../support/wrk.ts';

/**
 * The capacity model's costs on PostgreSQL (docs/scaling.md), per event stored, in two steps:
 *
 * `node bench/suites/capacity-postgres.ts grow --database URL --to N [--chunk 500000] [--until ISO]`: adds events
 * to a trusted account ('capacity fleet') in SQL (`insert … select … generate_series`, one
 * transaction per chunk, every index in place) until the store holds N, times in the current
 * month (the partition intake writes to), numbers and addresses spread as bench/support/generate-events.ts
 * spreads them, each in `event_ids` too. They are not folded: the next `measure` folds them.
 *
 * `node bench/suites/capacity-postgres.ts measure --database URL --key-secret S [--seconds 20]
 * [--phases single,batch] [--taxii]`: starts the server on the database, times its fold of whatever
 * backlog there is (intake stopped: events folded per second, and PostgreSQL's CPU per event
 * folded), then runs single-event intake (wrk, 64 connections) and batch intake (1,000 per
 * request, 4 connections) as bench/run.ts does. Around each phase, after a CHECKPOINT and once
 * the fold has caught up again at its end: PostgreSQL's CPU (every postgres process's
 * utime+stime from /proc, plus what the postmaster has reaped of exited ones), the WAL position
 * (pg_current_wal_lsn), pg_database_size and the server's own CPU, each over the events stored.
 * The server's TAXII publisher takes no turn during a measure (its first comes after an hour)
 * unless `--taxii` is given: on a store grown in SQL nothing was ever published, so its first
 * pass reads every aggregate row, a one-off that a store filled by intake never pays and that
 * would land in whichever phase it overlaps. Its own costs are measured by bench/suites/taxii.ts.
 */
const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: {
    database: { type: 'string' },
    'key-secret': { type: 'string' },
    to: { type: 'string' },
    until: { type: 'string' },
    chunk: { type: 'string', default: '500000' },
    seconds: { type: 'string', default: '20' },
    phases: { type: 'string', default: 'single,batch' },
    taxii: { type: 'boolean', default: false },
  },
});
const databaseUrl = values.database ?? process.env.DATABASE_URL;
if (!databaseUrl) throw new Error('--database');
const db = new pg.Client({ connectionString: databaseUrl });
await db.connect();
const one = async <T = Record<string, string>>(text: string, params: unknown[] = []) => (await db.query(text, params)).rows[0] as T;

/**
 * CPU time of this database's PostgreSQL processes so far, in µs, by pid: its backends and the
 * shared ones (checkpointer, WAL writer, background writer, autovacuum), not other databases'
 * backends (other engineers' runs share the server).
 */
function postgresCpuByPid(database: string): Map<number, number> {
  const cpu = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    let cmdline: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replaceAll('\0', ' ');
    } catch {
      continue;
    }
    if (stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')) !== 'postgres') continue;
    // A backend names its user and database: "postgres: 15/main: postgres tollwatch_x 127.0.0.1(…) idle".
    // An autovacuum worker names its database: "postgres: 15/main: autovacuum worker tollwatch_x".
    const backend = /^postgres: [^:]+: \S+ (\S+) (\S+\(\d+\)|\[local\])/.exec(cmdline) ?? /^postgres: [^:]+: autovacuum worker (\S+)/.exec(cmdline);
    if (backend && backend[1] !== database) continue;
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    cpu.set(Number(entry), (Number(fields[11]) + Number(fields[12])) * 10_000);
  }
  return cpu;
}

/**
 * Follows the CPU of this database's PostgreSQL processes from now, sampled every 500 ms so
 * that a process which exits (an autovacuum worker) keeps what it used up to its last sample.
 */
function followPostgresCpu(database: string) {
  const start = postgresCpuByPid(database);
  const last = new Map(start);
  const sample = () => {
    for (const [pid, micros] of postgresCpuByPid(database)) last.set(pid, micros);
  };
  const timer = setInterval(sample, 500);
  return () => {
    clearInterval(timer);
    sample();
    let used = 0;
    for (const [pid, micros] of last) used += micros - (start.get(pid) ?? 0);
    return used;
  };
}

const storedEvents = async () => Number((await one<{ n: string }>('select coalesce(max(id), 0) as n from events')).n);
const foldedThrough = async () => Number((await one<{ n: string }>(`select through as n from fold_state where name = 'aggregates'`)).n);
/** Waits until the fold has reached the newest event (polled every 200 ms). */
async function foldCaughtUp(): Promise<void> {
  for (;;) {
    if ((await foldedThrough()) >= (await storedEvents())) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

interface Reading {
  lsn: string;
  size: number;
  maxId: number;
  count: number;
  at: number;
}
async function reading(): Promise<Reading> {
  const row = await one<{ lsn: string; size: string }>('select pg_current_wal_lsn()::text as lsn, pg_database_size(current_database()) as size');
  const maxId = await storedEvents();
  return { lsn: row.lsn, size: Number(row.size), maxId, count: 0, at: performance.now() };
}
async function costs(before: Reading, after: Reading, postgresCpu: number) {
  const events = Number((await one<{ n: string }>('select count(*) as n from events where id > $1 and id <= $2', [before.maxId, after.maxId])).n);
  const wal = Number((await one<{ d: string }>('select pg_wal_lsn_diff($1, $2) as d', [after.lsn, before.lsn])).d);
  return {
    events,
    postgresCpuMicrosPerEvent: Math.round(postgresCpu / Math.max(1, events)),
    walBytesPerEvent: Math.round(wal / Math.max(1, events)),
    diskBytesPerEvent: Math.round((after.size - before.size) / Math.max(1, events)),
  };
}

if (positionals[0] === 'grow') {
  const target = Number(values.to);
  const chunk = Number(values.chunk);
  let fleet = await one<{ account_id: string }>(`select account_id from accounts where name = 'capacity fleet'`);
  if (!fleet) {
    fleet = await one(
      `insert into accounts (account_id, name, plan, trusted, disabled, created_at) values (gen_random_uuid()::text, 'capacity fleet', 'contributor', 1, 0, $1) returning account_id`,
      [new Date().toISOString()],
    );
  }
  const countries = `array['44','46','39','972','1','33','49','234','53','882']`;
  const agents = `array['friendly-scanner','sipvicious','VaxSIPUserAgent/3.1','NOT_FOUND','pplsip','']`;
  const methods = `array['INVITE','INVITE','INVITE','OPTIONS','REGISTER']`;
  // Times over the current month up to now: the partition intake writes to is the one that grows.
  const monthStart = new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), 1)).getTime();
  const span = Date.now() - 3_600_000 - monthStart;
  // --until: stop adding chunks after this instant (ISO), whatever the size reached then.
  const until = values.until ? Date.parse(values.until) : Infinity;
  for (;;) {
    const have = Number((await one<{ n: string }>('select count(*) as n from events')).n);
    if (have >= target || Date.now() >= until) break;
    const n = Math.min(chunk, target - have);
    const started = performance.now();
    await db.query(
      `with g as (
         select floor(random() ^ 2 * 200000)::int as n, random() as form, floor(random() * 50000)::int as a,
                to_timestamp(($2::float8 + floor(random() * $3::float8)) / 1000) at time zone 'UTC' as t,
                gen_random_uuid()::text as uuid, floor(random() * 5)::int + 1 as m, floor(random() * 6)::int + 1 as ua, random() as tr
         from generate_series(1, $4::int)
       ), p as (
         select g.*, '+' || (${countries})[n % 10 + 1] || left((700000000::bigint + n::bigint * 7919)::text, 10) as intl,
                to_char(t, 'YYYY-MM-DD"T"HH24:MI:SS.US') || lpad(floor(random() * 1000)::text, 3, '0') || 'Z' as event_time
         from g
       ), e as (
         insert into events (account_id, event_uuid, app_name, app_version, event_timestamp, created_by_node_id, collected_method,
           transport_type, source_ip, destination_ip, called_number, sip_method, sip_user_agent, sip_message, event_time,
           number_key, number_written, content_hash, received_at)
         select $1, uuid, 'sentrypeer', '4.0.6', replace(left(event_time, 29), 'T', ' '), '732e7f50-637d-4fde-81e0-5c32f1bb5a92', 'responsive',
           case when tr < 0.8 then 'UDP' else 'TCP' end,
           '10.' || ((n * 31 + a) % 250) || '.' || (a % 250) || '.' || floor(random() * 250)::int,
           '192.0.2.1', case when form < 0.5 then intl else '00' || substr(intl, 2) end, (${methods})[m], (${agents})[ua],
           'INVITE sip:' || intl || '@192.0.2.1 SIP/2.0' || chr(13) || chr(10) || chr(13) || chr(10), event_time,
           intl, case when form < 0.5 then intl else '00' || substr(intl, 2) end, md5(uuid), event_time
         from p order by uuid
         returning account_id, event_uuid, content_hash, event_time
       )
       insert into event_ids (account_id, event_uuid, content_hash, event_time) select * from e`,
      [fleet.account_id, monthStart, span, n],
    );
    const seconds = (performance.now() - started) / 1000;
    log(`grow: ${(have + n).toLocaleString('en')} events (+${n.toLocaleString('en')} in ${seconds.toFixed(1)} s, ${Math.round(n / seconds).toLocaleString('en')}/s)`);
  }
  log(`grow: database ${(Number((await one<{ s: string }>('select pg_database_size(current_database()) as s')).s) / 2 ** 30).toFixed(2)} GiB`);
  await db.end();
} else if (positionals[0] === 'measure') {
  requireWrk();
  const keySecret = values['key-secret'] ?? process.env.TOLLWATCH_KEY_SECRET;
  if (!keySecret) throw new Error('--key-secret');
  const seconds = Number(values.seconds);
  const client = await prepareStore(databaseUrl, keySecret);
  // The account's events join the shared data set, as a fleet's do.
  await db.query(`update accounts set trusted = 1 where account_id = (select account_id from clients where client_id = $1)`, [client.client_id]);
  const stored = async () => Number((await one<{ n: string }>('select count(*) as n from events')).n);
  const sizeAtStart = await stored();
  const backlog = (await storedEvents()) - (await foldedThrough());
  log(`measure: ${sizeAtStart.toLocaleString('en')} events stored, ${backlog.toLocaleString('en')} unfolded`);
  const databaseName = new URL(databaseUrl).pathname.slice(1);
  const foldBefore = await reading();
  const foldCpu = followPostgresCpu(databaseName);
  const taxii: Record<string, string> = values.taxii ? {} : { TOLLWATCH_TAXII_PUBLISH_INTERVAL: '3600' };
  const service = await startProcess('src/server.ts', { DATABASE_URL: databaseUrl, TOLLWATCH_KEY_SECRET: keySecret, ...taxii }, '/readyz');
  const results: Record<string, unknown>[] = [];
  try {
    const foldStarted = performance.now();
    await foldCaughtUp();
    const foldCpuUsed = foldCpu();
    if (backlog > 0) {
      const foldSeconds = (performance.now() - foldStarted) / 1000;
      const foldAfter = await reading();
      const folded = {
        phase: 'fold of the backlog, intake stopped',
        size: sizeAtStart,
        events: backlog,
        seconds: Number(foldSeconds.toFixed(1)),
        eventsPerSecond: Math.round(backlog / foldSeconds),
        postgresCpuMicrosPerEvent: Math.round(foldCpuUsed / backlog),
        walBytesPerEvent: Math.round(Number((await one<{ d: string }>('select pg_wal_lsn_diff($1, $2) as d', [foldAfter.lsn, foldBefore.lsn])).d) / backlog),
      };
      log(JSON.stringify(folded));
      results.push(folded);
    }
    const token = await tokenFor(service.url, client);
    const numbers = Array.from({ length: 2000 }, () => `00${poolNumber(Math.floor(Math.random() * 200_000)).slice(1)}`);
    for (const phase of values.phases.split(',')) {
      const batch = phase === 'batch';
      await db.query('checkpoint');
      const size = await stored();
      const before = await reading();
      const phaseCpu = followPostgresCpu(databaseName);
      const serverBefore = cpuMicros(service.child.pid);
      const wrk = await runWrk(service.url, batch ? batchLoad(token, numbers, 1000) : singleEventLoad(token, numbers), batch ? 4 : 64, seconds);
      const intakeEnded = performance.now();
      await foldCaughtUp();
      const postgresCpu = phaseCpu();
      const after = await reading();
      const serverAfter = cpuMicros(service.child.pid);
      const c = await costs(before, after, postgresCpu);
      const result = {
        phase: batch ? 'batch intake, 1,000 per request, 4 connections' : 'single-event intake, 64 connections',
        size,
        ...c,
        eventsPerSecond: Math.round(c.events / wrk.seconds),
        foldLagSecondsAfterLoad: Number(((after.at - intakeEnded) / 1000).toFixed(1)),
        serverCpuMicrosPerEvent: Math.round((serverAfter - serverBefore) / Math.max(1, c.events)),
        p50: wrk.p50,
        p99: wrk.p99,
        statuses: wrk.statuses,
        errors: wrk.errors,
        databaseGiB: Number((after.size / 2 ** 30).toFixed(2)),
      };
      log(JSON.stringify(result));
      results.push(result);
    }
  } finally {
    await service.stop();
    await db.end();
  }
  console.log(JSON.stringify(results));
} else {
  throw new Error('grow or measure');
}

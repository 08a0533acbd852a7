import SQLiteDatabase from 'better-sqlite3';
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { threadId } from 'node:worker_threads';

/**
 * Loaded into a server with `--import` (bench/probes/profile.ts `--statements` does), in every thread:
 * times each SQLite statement the thread runs, by its text, and appends the running totals to
 * `$TOLLWATCH_STATEMENT_TIMES_DIR/statements.<pid>.<thread>.jsonl` four times a second, each
 * line stamped with the monotonic clock, so that a reader can take the difference over a
 * window. A CPU profile puts SQLite's work under one driver function; this says which statement
 * it was. Commits are told apart by the connection's `synchronous` setting: the writer thread
 * commits a fold step at NORMAL (no fsync) and intake at FULL (src/store/writer/writer-thread-worker.ts).
 */
const dir = process.env.TOLLWATCH_STATEMENT_TIMES_DIR;
if (!dir) throw new Error('bench/probes/statement-times.ts needs TOLLWATCH_STATEMENT_TIMES_DIR');

interface Total {
  calls: number;
  nanos: number;
}
const totals = new Map<string, Total>();
const synchronous = new WeakMap<object, string>();
const timed = new Set(['run', 'get', 'all', 'iterate']);

const prototype = SQLiteDatabase.prototype as unknown as { prepare(this: object, text: string): object };
const prepare = prototype.prepare;
prototype.prepare = function (this: object, text: string) {
  const statement = prepare.call(this, text);
  const connection = this;
  const name = text.replace(/\s+/g, ' ').trim().slice(0, 100);
  const setting = /^PRAGMA synchronous = (\w+)/i.exec(name)?.[1]?.toUpperCase();
  return new Proxy(statement, {
    get(target, property) {
      const value = Reflect.get(target, property, target) as unknown;
      if (typeof value !== 'function') return value;
      if (!timed.has(String(property))) return value.bind(target);
      return (...args: unknown[]) => {
        const label = name === 'commit' ? `commit (synchronous=${synchronous.get(connection) ?? 'FULL'})` : name;
        const started = process.hrtime.bigint();
        try {
          return value.apply(target, args);
        } finally {
          const total = totals.get(label) ?? { calls: 0, nanos: 0 };
          total.calls += 1;
          total.nanos += Number(process.hrtime.bigint() - started);
          totals.set(label, total);
          if (setting) synchronous.set(connection, setting);
        }
      };
    },
  });
};

const file = join(dir, `statements.${process.pid}.${threadId}.jsonl`);
setInterval(() => {
  if (totals.size === 0) return;
  appendFileSync(file, `${JSON.stringify({ at: Number(process.hrtime.bigint() / 1000n), totals: Object.fromEntries(totals) })}\n`);
}, 250).unref();

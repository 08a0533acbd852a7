import type { AggregateRow, AggregateTable } from './ingest-writes.ts';

/**
 * Rows kept per table. A row with a few names in each of its three maps of named counts takes
 * about 0.8 KB of heap (measured: 31 MB for 40,000), so both tables full hold about 16 MB,
 * and at most about four times that if every key had its 32 names in every map. The busy keys
 * of a step are far fewer (bench/probes/fold-steps.ts: 2,250); a stream of never-repeated keys only
 * cycles through it.
 */
export const FOLD_ROWS_KEPT = 10_000;

/**
 * Rows the fold wrote, kept per table, most recently used last: a key that the previous
 * step wrote is not read back by the next one. Busy numbers and addresses (a scanner's address,
 * a test number dialled all day) are in nearly every step. On PostgreSQL, receiving and
 * converting those rows would be 13-28% of the process's CPU per event folded; on SQLite, where
 * the pages are in memory anyway, 1-2% (bench/probes/fold-steps.ts).
 *
 * What is kept is exactly what the store holds only while nothing else wrote aggregate rows
 * since. Only fold steps and rebuilds write them: so a step that continues this cache's last
 * step (it starts at the position that step committed, with no rebuild between) may use it,
 * and any other step (another instance or process folded meanwhile, a rebuild ran, a step
 * here failed after it may have committed) starts from an empty cache.
 */
export class FoldRowCache {
  private readonly maxRowsPerTable: number;
  private readonly rows: Record<AggregateTable, Map<string, AggregateRow>> = { number_aggregates: new Map(), ip_aggregates: new Map() };
  /** The fold position and rebuild count the kept rows are as of; undefined: nothing kept. */
  private asOf: { through: number; rebuilds: number } | undefined;

  constructor(maxRowsPerTable = FOLD_ROWS_KEPT) {
    this.maxRowsPerTable = maxRowsPerTable;
  }

  /** Rows kept, in both tables (a gauge: about 0.8 KB of heap each). */
  get size(): number {
    return this.rows.number_aggregates.size + this.rows.ip_aggregates.size;
  }

  /**
   * Begins a step that read the store's position `from` and rebuild count: the rows kept stay
   * only if they are as of exactly that. Answers what the step writes into, applied by commit().
   */
  begin(from: number, rebuilds: number): FoldRowWrites {
    if (this.asOf?.through !== from || this.asOf.rebuilds !== rebuilds) this.clear();
    return new FoldRowWrites(this, rebuilds);
  }

  /** The row of (table, id) as the store holds it, or undefined when not kept (read it). */
  get(table: AggregateTable, id: string): AggregateRow | undefined {
    const rows = this.rows[table];
    const row = rows.get(id);
    if (row) {
      // Most recently used last: eviction takes from the front.
      rows.delete(id);
      rows.set(id, row);
    }
    return row;
  }

  /** Forgets everything: the next step reads every row it needs. */
  clear(): void {
    this.rows.number_aggregates.clear();
    this.rows.ip_aggregates.clear();
    this.asOf = undefined;
  }

  /** @internal Applies a committed step's rows, as of the position it committed. */
  apply(written: Map<AggregateTable, Map<string, AggregateRow>>, through: number, rebuilds: number): void {
    for (const [table, rows] of written) {
      const kept = this.rows[table];
      for (const [id, row] of rows) {
        kept.delete(id);
        kept.set(id, row);
      }
      for (const id of kept.keys()) {
        if (kept.size <= this.maxRowsPerTable) break;
        kept.delete(id);
      }
    }
    this.asOf = { through, rebuilds };
  }
}

/** The rows one fold step writes, kept aside until its transaction commits. */
export class FoldRowWrites {
  private readonly cache: FoldRowCache;
  private readonly rebuilds: number;
  private readonly written = new Map<AggregateTable, Map<string, AggregateRow>>();

  constructor(cache: FoldRowCache, rebuilds: number) {
    this.cache = cache;
    this.rebuilds = rebuilds;
  }

  get(table: AggregateTable, id: string): AggregateRow | undefined {
    return this.cache.get(table, id);
  }

  wrote(table: AggregateTable, id: string, row: AggregateRow): void {
    let rows = this.written.get(table);
    if (!rows) this.written.set(table, (rows = new Map()));
    rows.set(id, row);
  }

  /** The step committed, moving the position to `through`: what it wrote is what the store holds. */
  commit(through: number): void {
    this.cache.apply(this.written, through, this.rebuilds);
  }

  /** The step failed: whether it committed is unknown, so nothing kept is trusted. */
  fail(): void {
    this.cache.clear();
  }
}

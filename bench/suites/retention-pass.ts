import { parseArgs } from 'node:util';
import { openDatabase } from '../../src/store/database.ts';
import { StoreMaintenance } from '../../src/store/maintenance/maintenance.ts';
import { log } from '../support/support.ts';

/**
 * One retention pass on a store, timed: `node bench/suites/retention-pass.ts --database URL --cutoff ISO
 * [--days 30]` removes every event older than the cutoff (the pass runs as if it were `days`
 * after it) and recomputes the aggregates of the keys they counted in, as the hourly pass does
 * (src/store/maintenance/maintenance.ts). Against a grown store (bench/suites/capacity-postgres.ts grow, then
 * `aggregates rebuild`), a cutoff an hour into its events is one hourly pass of a store at that
 * size; compare with the time `aggregates rebuild` took, which every such pass cost before.
 * It removes events: run it on a store made for measuring.
 */
const { values } = parseArgs({ options: { database: { type: 'string' }, cutoff: { type: 'string' }, days: { type: 'string', default: '30' } } });
const url = values.database ?? process.env.DATABASE_URL;
if (!url || !values.cutoff) throw new Error('--database URL --cutoff ISO');
const days = Number(values.days);
const now = new Date(Date.parse(values.cutoff) + days * 86_400_000);
const database = await openDatabase(url);
try {
  const started = performance.now();
  const report = await new StoreMaintenance(database, days).runOnce(now);
  const seconds = (performance.now() - started) / 1000;
  log(`retention pass: ${seconds.toFixed(1)} s`);
  console.log(JSON.stringify({ cutoff: values.cutoff, seconds: Number(seconds.toFixed(1)), ...report }));
} finally {
  await database.close();
}

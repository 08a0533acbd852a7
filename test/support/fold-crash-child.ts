/**
 * Stores events and folds them into the lookup aggregates, over and over, until it is killed:
 * test/durability/fold-crash.test.ts kills it with SIGKILL at random points. Arguments: the
 * store's URL, a seed, then the accounts to store for, each as `<account id>=<scope>`. Says
 * `ready` on stdout once the store is open.
 */
import { foldStep } from '../../src/store/fold/aggregate-fold.ts';
import { openDatabase } from '../../src/store/database.ts';
import { SqlEventsRepository } from '../../src/store/repositories/events-repository.ts';
import { FoldRowCache } from '../../src/store/fold/fold-row-cache.ts';
import { validSampleEvent } from './harness.ts';
import { seededRandom } from './seeded-random.ts';

const [url, seed, ...owners] = process.argv.slice(2);
const next = seededRandom(Number(seed));
const database = await openDatabase(url!);
const repo = new SqlEventsRepository(database.db, database.ingestWrites);
// As the server's writer thread keeps it: a step trusts it only after its own last commit.
const kept = new FoldRowCache();
// Few keys, so that steps change rows that earlier steps wrote, in both scopes.
const numbers = ['+441234300001', '+441234300002', '+441234300003', '+441234300004'];
const addresses = ['198.51.100.30', '198.51.100.31', '198.51.100.32'];
// Never outlives the test that started it (a test that failed or timed out before its kill).
const parent = process.ppid;
setInterval(() => process.ppid !== parent && process.exit(1), 500).unref();
process.stdout.write('ready\n');
for (;;) {
  const [accountId, scope] = owners[next(owners.length)]!.split('=') as [string, string];
  const events = Array.from({ length: 1 + next(30) }, () =>
    validSampleEvent({
      called_number: numbers[next(numbers.length)],
      source_ip: addresses[next(addresses.length)],
      sip_method: ['INVITE', 'OPTIONS', 'REGISTER'][next(3)],
      sip_user_agent: ['friendly-scanner', 'sipvicious', 'NOT_FOUND'][next(3)],
    }),
  );
  await repo.ingest({ accountId, scope }, events);
  if (next(2) === 0) await foldStep(database, 1 + next(120), kept);
  // SQLite answers synchronously: without a turn of the event loop the check above never runs.
  await new Promise((resolve) => setImmediate(resolve));
}

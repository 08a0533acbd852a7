import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SHARED_SCOPE } from '../../src/domain/visibility.ts';
import { foldStep } from '../../src/store/fold/aggregate-fold.ts';
import { rebuildAggregates } from '../../src/store/fold/aggregates-rebuild.ts';
import { openDatabase, type Database } from '../../src/store/database.ts';
import { aggregateSnapshot } from '../support/aggregates.ts';
import { seededRandom } from '../support/seeded-random.ts';
import { cli } from '../support/server-process.ts';
import { freshDatabase, type TestDatabase } from '../support/test-database.ts';

const CHILD = new URL('../support/fold-crash-child.ts', import.meta.url).pathname;

/**
 * The fold moves its position in the transaction that adds the events to the aggregates
 * (src/store/fold/aggregate-fold.ts), so a crash loses both or neither: nothing counted is lost or
 * counted twice. A child process stores events and folds them, in steps of random sizes, and
 * is killed with SIGKILL at random points, again and again; what it left, folded to the end,
 * must be what a rebuild from the events makes.
 */
describe('the fold through crashes', () => {
  let database: TestDatabase;
  let store: Database | undefined;
  let child: ChildProcess | undefined;

  beforeAll(async () => {
    database = await freshDatabase();
  });
  afterAll(async () => {
    child?.kill('SIGKILL');
    await store?.close();
    await database?.drop();
  });

  it('ends with the aggregates a rebuild makes, wherever SIGKILL lands', async () => {
    const shared = cli(database.url, 'accounts', 'create', '--name', 'shared', '--trusted');
    const own = cli(database.url, 'accounts', 'create', '--name', 'own');
    const owners = [`${shared.account_id}=${SHARED_SCOPE}`, `${own.account_id}=${own.account_id}`];
    const next = seededRandom(27);
    for (let round = 0; round < 8; round++) {
      const running = spawn(process.execPath, [CHILD, database.url, String(round), ...owners], { stdio: ['ignore', 'pipe', 'inherit'] });
      child = running;
      const exited = once(running, 'exit');
      await new Promise<void>((resolve, reject) => {
        running.stdout!.setEncoding('utf8').on('data', (text: string) => text.includes('ready') && resolve());
        running.once('exit', (code) => reject(new Error(`the child ended before it was ready (${code})`)));
      });
      await new Promise((resolve) => setTimeout(resolve, 50 + next(400)));
      running.kill('SIGKILL');
      await exited;
    }

    store = await openDatabase(database.url);
    const { stored } = await store.db.selectFrom('events').select((eb) => eb.fn.countAll<number>().as('stored')).executeTakeFirstOrThrow();
    expect(Number(stored)).toBeGreaterThan(100);
    // To the end. On PostgreSQL a killed child's session may hold the fold's turn a moment longer.
    for (;;) {
      const step = await foldStep(store, 5000);
      if (!step.skipped && !step.more && step.behind === 0) break;
    }
    const folded = await aggregateSnapshot(store.db);
    await rebuildAggregates(store.db, store.caps);
    expect(folded).toEqual(await aggregateSnapshot(store.db));
  }, 120_000);
});

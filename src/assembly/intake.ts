import { AccountActivity } from '../domain/account-activity.ts';
import { EventIntake } from '../domain/event-intake.ts';
import { EventQuery } from '../domain/event-query.ts';
import { IngestUrls } from '../domain/ingest-urls.ts';
import { EventImport, type ImportSource } from '../import/event-import.ts';
import { openImportSource, type DatabaseDefaults } from '../import/sentrypeer-files.ts';
import { SqlAccountActivityRepository } from '../store/account-activity-repository.ts';
import { dropEventQueryIndexes, ensureEventQueryIndexes } from '../store/event-indexes.ts';
import { SqlEventsRepository } from '../store/events-repository.ts';
import { GroupCommit, type Gathering } from '../store/group-commit.ts';
import { SqlIngestUrlsRepository } from '../store/ingest-urls-repository.ts';
import { IngestUrlsOnWriter } from '../store/writes-on-writer.ts';
import type { AggregatePipeline } from './aggregates.ts';
import type { AuthServices } from './auth.ts';
import type { Foundation } from './foundation.ts';

/** Events in and out: submissions, node ingest URLs, the operator's import, an account's own events and nodes. */
export interface IntakeServices {
  intake: EventIntake;
  /** Node ingest URLs: a secret in the path instead of a token (docs/api.md §11). */
  ingestUrls: IngestUrls;
  eventQuery: EventQuery;
  /** The operator's bulk import of SentryPeer logs and databases into an account (docs/operations.md). */
  importer: EventImport;
  /** Opens a SentryPeer JSON log or SQLite database for `importer`. */
  openImportSource(path: string, defaults: DatabaseDefaults): Promise<ImportSource>;
  /** Counts over an account's own events: its nodes and its overview. */
  activity: AccountActivity;
}

/** How the writer thread's commits gather a stream of single events (store/group-commit.ts). */
const WRITER_GATHERING: Gathering = { ms: 2, events: 16, streamMs: 10 };

export async function assembleIntake(base: Foundation, auth: Pick<AuthServices, 'accounts'>, aggregates: Pick<AggregatePipeline, 'aggregateFolder'>): Promise<IntakeServices> {
  const { database, writer, config, audit, plans } = base;
  const { accounts } = auth;
  const { aggregateFolder } = aggregates;
  const eventsRepo = new SqlEventsRepository(database.db, database.ingestWrites);
  // Concurrent submissions are committed together: one transaction and one WAL flush for many
  // events, each answered only after that commit; the folder hears of each commit, and holds
  // intake back when it falls far behind.
  const folding = { onCommitted: (keysByAccount: Map<string, Set<string>>, events: number) => aggregateFolder.committed(keysByAccount, events), beforeCommit: () => aggregateFolder.roomForIntake() };
  // One group at a time on the writer thread: what arrives meanwhile waits and forms the next,
  // larger group. Two in flight (the next group queued on the thread while one commits) made
  // smaller groups and fewer events a second: 5,459–5,779 against 6,049–6,303 single events a
  // second, alternating runs of `BENCH_PHASES=3 npm run bench` on 2026-11-24.
  // A steady stream makes small commits when the disk syncs fast (2.3 events a commit at 2,000
  // a second, with a 4 KiB synchronous write at 0.15 ms), and each commit costs the writer thread
  // CPU of its own whatever it carries. Gathering for 2 ms took the server's CPU per paced
  // event from 680–707 to 498–563 µs at 1,000 a second, 420–432 to 318–362 at 2,000, 305–318 to
  // 294–296 at 3,500, and left flat-out intake as it was (docs/performance.md, "Commits gathered
  // from a stream"). A lone event on a quiet server does not wait.
  const intake = new EventIntake(new GroupCommit(eventsRepo, writer, writer ? { maxInFlight: 1, gathering: WRITER_GATHERING, ...folding } : folding), plans);
  return {
    intake,
    ingestUrls: new IngestUrls({
      // On a SQLite file a use is written through the writer thread (store/writes-on-writer.ts).
      repo: writer ? new IngestUrlsOnWriter(database.db, writer) : new SqlIngestUrlsRepository(database.db),
      getAccount: (accountId) => accounts.getAccount(accountId),
      assertMaySubmit: (account) => intake.assertMaySubmit(account),
      publicUrl: config.publicUrl,
      audit,
    }),
    eventQuery: await EventQuery.open(eventsRepo, base.serverSecrets),
    // Not through group commit (its transactions are large already), but on the writer thread
    // where there is one, so the import reads and checks its next batch meanwhile.
    importer: new EventImport(
      writer ? { ingest: async (owner, events) => (await writer.ingestGroups([{ owner, events }]))[0] ?? [] } : eventsRepo,
      (accountId) => accounts.getAccount(accountId),
      audit,
      {
        drop: () => dropEventQueryIndexes(database.unhurried),
        build: async () => {
          await ensureEventQueryIndexes(database.unhurried, database.caps);
        },
      },
    ),
    openImportSource,
    activity: new AccountActivity(new SqlAccountActivityRepository(database.db), undefined, audit),
  };
}

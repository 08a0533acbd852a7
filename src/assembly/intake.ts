import { AccountActivity } from '../domain/accounts/account-activity.ts';
import { EventIntake } from '../domain/events/event-intake.ts';
import { EventQuery } from '../domain/events/event-query.ts';
import { IngestUrls } from '../domain/events/ingest-urls.ts';
import { EventImport, type ImportSource } from '../import/event-import.ts';
import { openImportSource, type DatabaseDefaults } from '../import/sentrypeer-files.ts';
import { SqlAccountActivityRepository } from '../store/repositories/account-activity-repository.ts';
import { dropEventQueryIndexes, ensureEventQueryIndexes } from '../store/maintenance/event-indexes.ts';
import { SqlEventsRepository } from '../store/repositories/events-repository.ts';
import { GroupCommit, type Gathering } from '../store/writer/group-commit.ts';
import { SqlIngestUrlsRepository } from '../store/repositories/ingest-urls-repository.ts';
import { IngestUrlsOnWriter } from '../store/writer/writes-on-writer.ts';
import type { AggregatePipeline } from './aggregates.ts';
import type { AuthAssembly } from './auth.ts';
import type { Foundation } from './foundation.ts';

/** Events in and out: submissions, node ingest URLs, the operator's import, an account's own events and nodes. */
export interface IntakeAssembly {
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

/** How the writer thread's commits gather a stream of single events (store/writer/group-commit.ts). */
const WRITER_GATHERING: Gathering = { ms: 2, events: 16, streamMs: 10 };

export async function assembleIntake(base: Foundation, auth: Pick<AuthAssembly, 'accounts'>, aggregates: Pick<AggregatePipeline, 'aggregateFolder'>): Promise<IntakeAssembly> {
  const { database, writer, config, audit, plans } = base;
  const { accounts } = auth;
  const { aggregateFolder } = aggregates;
  const eventsRepo = new SqlEventsRepository(database.db, database.ingestWrites);
  // Concurrent submissions are committed together: one transaction and one WAL flush for many
  // events, each answered only after that commit; the folder hears of each commit, and holds
  // intake back when it falls far behind.
  const folding = { onCommitted: (keysByAccount: Map<string, Set<string>>, events: number) => aggregateFolder.committed(keysByAccount, events), beforeCommit: () => aggregateFolder.roomForIntake() };
  // One group at a time on the writer thread: what arrives meanwhile waits and forms the next,
  // larger group; two in flight make smaller groups and fewer events a second. A steady stream
  // makes small commits when the disk syncs fast, and each commit costs the writer thread CPU of
  // its own whatever it carries, so a group gathers for up to 2 ms, which costs flat-out intake
  // nothing (docs/performance.md, "Commits gathered from a stream"). A lone event on a quiet
  // server does not wait.
  const intake = new EventIntake(new GroupCommit(eventsRepo, writer, writer ? { maxInFlight: 1, gathering: WRITER_GATHERING, ...folding } : folding), plans);
  return {
    intake,
    ingestUrls: new IngestUrls({
      // On a SQLite file a use is written through the writer thread (store/writer/writes-on-writer.ts).
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

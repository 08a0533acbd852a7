import { TaxiiCollections } from '../domain/intelligence/taxii-collections.ts';
import { TaxiiPublisher, type PublishedPeers } from '../domain/intelligence/taxii-publication.ts';
import { TaxiiStoreOnWriter } from '../store/writer/taxii-on-writer.ts';
import { SqlTaxiiRepository } from '../store/repositories/taxii-repository.ts';
import type { AllowlistReader } from '../domain/allowlists/allowlists.ts';
import type { Foundation } from './foundation.ts';
import type { ReportedValues } from '../domain/intelligence/value-reports.ts';

/** The TAXII 2.1 server's two halves (docs/taxii.md). */
export interface TaxiiAssembly {
  /** What the collections serve: versions read a page at a time (from the replica where there is one). */
  taxii: TaxiiCollections;
  /**
   * Publishes versions of the shared data set's indicators; every serving process runs it (on
   * listen, app.ts), and a lease in the store lets one at a time work.
   */
  taxiiPublisher: TaxiiPublisher;
}

/**
 * `allowlists` holds the operator's allowlist, whose values no collection publishes; `reports` the
 * operator's accepted false-positive reports; `peers` what peers said, passed on where the operator lets it be.
 */
export function assembleTaxii(base: Foundation, allowlists: AllowlistReader, now?: () => Date, reports?: ReportedValues, peers?: PublishedPeers): TaxiiAssembly {
  const { database, reads, config, writer } = base;
  const published = new SqlTaxiiRepository(database.db, database.caps);
  return {
    // A replica replays commits in order, so what it shows of the versions is always a prefix
    // of their date_added order: a poll there may be behind, never missing one.
    taxii: new TaxiiCollections(new SqlTaxiiRepository(reads.db, reads.caps)),
    // On a SQLite file its writes go through intake's writer thread, as intake's and the fold's do.
    taxiiPublisher: new TaxiiPublisher(writer ? new TaxiiStoreOnWriter(published, writer) : published, {
      minScore: config.taxii.minScore,
      retentionDays: config.taxii.retentionDays,
      scoring: config.scoring,
      allowlists,
      ...(reports ? { reports } : {}),
      ...(peers ? { peers } : {}),
      ...(now ? { now } : {}),
    }),
  };
}

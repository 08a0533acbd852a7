import { AcceptedReports, ValueReports } from '../domain/intelligence/value-reports.ts';
import { SqlReportsRepository } from '../store/repositories/reports-repository.ts';
import type { Foundation } from './foundation.ts';

/**
 * How long the accepted reports are kept before they are read again: the bound when no notice
 * arrives (as the plan table's). A decision made in this process, announced by another
 * instance, or (on SQLite) committed by the operator CLI is seen at the next lookup.
 */
const ACCEPTED_REPORTS_TTL_MS = 5000;

/** What `assembleReports` builds: false-positive reports (docs/api.md §17) and what scores read of them. */
export interface ReportsAssembly {
  reports: ValueReports;
  /** The accepted reports kept in memory, handed to every service that scores. */
  acceptedReports: AcceptedReports;
}

/** `ttlMs` (ACCEPTED_REPORTS_TTL_MS by default): tests lengthen it to show notices, not the bound, at work. */
export async function assembleReports(base: Foundation, ttlMs = ACCEPTED_REPORTS_TTL_MS): Promise<ReportsAssembly> {
  const { database, audit } = base;
  const acceptedReports = new AcceptedReports(new SqlReportsRepository(database.db), ttlMs, database.externalChangeCounter);
  // Another instance's decision (or a lost notice) drops what this one keeps.
  await base.onAccessChange(() => acceptedReports.clear());
  const reports = new ValueReports(new SqlReportsRepository(database.db, base.announce), {
    audit,
    onAcceptedChanged: () => acceptedReports.clear(),
  });
  return { reports, acceptedReports };
}

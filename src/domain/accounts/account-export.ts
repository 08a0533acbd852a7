import type { AccountsService } from './accounts.ts';
import type { AuditTrail } from './audit.ts';
import { ServiceError } from '../errors.ts';

/**
 * The kinds of record an account export holds, in the order they are written: every line of the
 * export is `{"type": <kind>, "record": {…}}`, between an opening `export` line and a closing
 * `manifest` line with the count of each kind (docs/dashboard.md, "Leaving").
 */
export const EXPORT_KINDS = [
  'account',
  'user',
  'invitation',
  'invited_address',
  'two_factor',
  'sso_identity',
  'client',
  'ingest_url',
  'integration',
  'node_name',
  'allowlist_entry',
  'report',
  'alert',
  'alert_delivery',
  'delivery_attempt',
  'contributor_request',
  'board_alias',
  'audit',
  'event',
] as const;

export type ExportKind = (typeof EXPORT_KINDS)[number];

/** What the export version 1 looks like; raised when a kind changes its fields. */
export const EXPORT_FORMAT = { format: 'tollwatch-account-export', version: 1 } as const;

/**
 * Reads an account's records for its export: each kind page after page by key, so an account of
 * any size is held one page at a time. Only the columns an export may show are read: never a
 * secret, a secret's hash, a password hash or a session.
 */
export interface AccountExportReader {
  pages(kind: ExportKind, accountId: string): AsyncIterable<Array<Record<string, unknown>>>;
}

/**
 * The account's export as NDJSON lines. A generator: each page is read when the consumer asks
 * for the next line (Readable.from pulls only while the socket or file takes what it is given),
 * so a slow reader holds the store's reads back instead of filling memory.
 */
export async function* accountExportLines(reader: AccountExportReader, accountId: string, now = new Date()): AsyncGenerator<string> {
  yield `${JSON.stringify({ type: 'export', ...EXPORT_FORMAT, account_id: accountId, exported_at: now.toISOString() })}\n`;
  const counts: Partial<Record<ExportKind, number>> = {};
  for (const kind of EXPORT_KINDS) {
    let count = 0;
    for await (const page of reader.pages(kind, accountId)) {
      // One chunk per page: a line per write would cost a stream round trip per event.
      yield page.map((record) => `${JSON.stringify({ type: kind, record })}\n`).join('');
      count += page.length;
    }
    counts[kind] = count;
  }
  yield `${JSON.stringify({ type: 'manifest', counts })}\n`;
}

/** Exports for the account's owner and the operator: the account checked and the export audited before the first line. */
export class AccountExports {
  private readonly reader: AccountExportReader;
  private readonly accounts: Pick<AccountsService, 'getAccount'>;
  private readonly audit: AuditTrail;
  private readonly closing: (accountId: string) => Promise<boolean>;

  /** `closing` tells an account being closed, whose export would hold what is not erased yet. */
  constructor(reader: AccountExportReader, accounts: Pick<AccountsService, 'getAccount'>, audit: AuditTrail, closing: (accountId: string) => Promise<boolean>) {
    this.reader = reader;
    this.accounts = accounts;
    this.audit = audit;
    this.closing = closing;
  }

  /** The export's lines, read as they are consumed; `not_found` for an unknown account, or one being closed. */
  async open(accountId: string, actor: string): Promise<AsyncGenerator<string>> {
    await this.accounts.getAccount(accountId);
    if (await this.closing(accountId)) throw new ServiceError('not_found', 'no such account');
    await this.audit.record({ action: 'account.exported', actor, accountId, detail: { ...EXPORT_FORMAT } });
    return accountExportLines(this.reader, accountId);
  }
}

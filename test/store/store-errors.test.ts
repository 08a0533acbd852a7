import { describe, expect, it } from 'vitest';
import { isStoreUnavailable } from '../../src/store/store-errors.ts';

describe('which store faults mean "retry shortly" (503), not "broken" (500)', () => {
  it('knows a full disk on either store, and a node-postgres client left unqueryable by an outage', () => {
    expect(isStoreUnavailable(Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' }))).toBe(true);
    expect(isStoreUnavailable(Object.assign(new Error('could not extend file'), { code: '53100' }))).toBe(true);
    // Raised from GroupCommit's ROLLBACK during a PostgreSQL restart: it was a 500.
    expect(isStoreUnavailable(new Error('Client has encountered a connection error and is not queryable'))).toBe(true);
    // Every other way node-postgres says its server is away, or not answering.
    for (const message of ['Connection terminated unexpectedly', 'Connection terminated due to connection timeout', 'timeout exceeded when trying to connect', 'timeout expired', 'Query read timeout', 'Client was closed and is not queryable']) {
      expect(isStoreUnavailable(new Error(message)), message).toBe(true);
    }
    for (const code of ['ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'ECONNABORTED', '08006', '57P01', '25006']) expect(isStoreUnavailable(Object.assign(new Error('x'), { code })), code).toBe(true);
    expect(isStoreUnavailable(Object.assign(new Error('syntax error'), { code: '42601' }))).toBe(false);
    expect(isStoreUnavailable(new Error('cannot rollback - no transaction is active'))).toBe(false);
  });
});

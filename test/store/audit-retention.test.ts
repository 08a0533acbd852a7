import { afterEach, describe, expect, it } from 'vitest';
import { FAILURE_ACTIONS, type AuditAction } from '../../src/domain/accounts/audit.ts';
import { StoreMaintenance } from '../../src/store/maintenance/maintenance.ts';
import { startHarness, type Harness } from '../support/harness.ts';

const DAY = 86_400_000;

/** Audit rows as an earlier day would have written them, straight into the table. */
async function insertRows(h: Harness, rows: Array<{ action: AuditAction; at: Date; clientId?: string }>) {
  for (const row of rows) {
    await h.services.database.db
      .insertInto('audit_log')
      .values({ at: row.at.toISOString(), action: row.action, actor: 'anonymous', account_id: null, client_id: row.clientId ?? null, ip: '192.0.2.1', detail: null })
      .execute();
  }
}

async function countRows(h: Harness, failures: boolean) {
  const rows = await h.services.database.db.selectFrom('audit_log').select(['action']).execute();
  return rows.filter((r) => FAILURE_ACTIONS.includes(r.action as AuditAction) === failures).length;
}

/** A failed token request naming an unknown client, from an address of its own. */
function failedTokenRequest(h: Harness, i: number) {
  return fetch(`${h.url}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-forwarded-for': `2001:db8:${(i >> 16).toString(16)}:${(i & 0xffff).toString(16)}::1` },
    body: JSON.stringify({ client_id: `twc_rotating${i}`, client_secret: 'wrong', grant_type: 'client_credentials' }),
  });
}

describe('audit retention (docs/operations.md, Retention)', () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  it('the hourly maintenance removes rows older than the retention, of every action, and keeps the rest', async () => {
    h = await startHarness({ TOLLWATCH_AUDIT_RETENTION_DAYS: '30' });
    const now = new Date();
    await insertRows(h, [
      { action: 'account.created', at: new Date(now.getTime() - 31 * DAY) },
      { action: 'token.issued', at: new Date(now.getTime() - 45 * DAY) },
      { action: 'api.auth_failed', at: new Date(now.getTime() - 400 * DAY) },
      { action: 'client.secret_reset', at: new Date(now.getTime() - 29 * DAY), clientId: 'twc_kept1' },
      { action: 'token.refused', at: new Date(now.getTime() - 1 * DAY), clientId: 'twc_kept2' },
    ]);
    const maintenance = new StoreMaintenance(h.services.database, undefined, undefined, h.services.auditRetention);
    const report = await maintenance.runOnce(now);
    expect(report.auditRowsRemoved).toBe(3);
    const left = await h.services.database.db.selectFrom('audit_log').select(['action', 'client_id', 'at']).execute();
    expect(left.every((r) => r.at >= new Date(now.getTime() - 30 * DAY).toISOString())).toBe(true);
    expect(left.map((r) => r.client_id)).toEqual(expect.arrayContaining(['twc_kept1', 'twc_kept2']));
    expect((await maintenance.runOnce(now)).auditRowsRemoved).toBe(0);
  });

  it('the hourly maintenance keeps only the newest failure rows beyond the cap, and every other row', async () => {
    h = await startHarness({ TOLLWATCH_AUDIT_MAX_FAILURE_ROWS: '40' });
    const now = new Date();
    const rows = Array.from({ length: 150 }, (_, i) => ({
      action: i % 5 === 0 ? ('token.issued' as const) : FAILURE_ACTIONS[i % FAILURE_ACTIONS.length]!,
      at: new Date(now.getTime() - (150 - i) * 1000),
      clientId: `twc_${i}`,
    }));
    await insertRows(h, rows);
    const report = await new StoreMaintenance(h.services.database, undefined, undefined, h.services.auditRetention).runOnce(now);
    const failures = rows.filter((r) => r.action !== 'token.issued');
    expect(report.auditRowsRemoved).toBe(failures.length - 40);
    const kept = await h.services.database.db.selectFrom('audit_log').select(['action', 'client_id']).execute();
    const keptFailures = kept.filter((r) => FAILURE_ACTIONS.includes(r.action as AuditAction)).map((r) => r.client_id).sort();
    expect(keptFailures).toEqual(failures.slice(-40).map((r) => r.clientId).sort());
    // Every row of other actions stays (the operator's and token rows are bounded by days only).
    expect(kept.filter((r) => r.action === 'token.issued')).toHaveLength(30);
  });

  it('a flood of failures from rotating addresses is cut back to the cap without waiting for the hour', async () => {
    // Addresses from X-Forwarded-For, so each request comes from an address of its own, as
    // from an attacker's rotating ones: no per-address throttle holds them back.
    h = await startHarness({ TOLLWATCH_AUDIT_MAX_FAILURE_ROWS: '50', TOLLWATCH_TRUST_PROXY: 'loopback' });
    const who = await h.account();
    await who.token();
    const cap = 50;
    for (let i = 0; i < 400; i += 20) {
      const answers = await Promise.all(Array.from({ length: 20 }, (_, j) => failedTokenRequest(h!, i + j)));
      for (const res of answers) {
        expect(res.status).toBe(401);
        await res.arrayBuffer();
      }
    }
    // Rows are written after the answer and pruned in the background, whenever a tenth of the
    // cap has piled up: once all 400 are in, at most the cap and a tenth of it are left, with
    // no maintenance pass run.
    const flooded = h;
    await expect
      .poll(async () => (await flooded.services.database.db.selectFrom('audit_log').select('id').where('client_id', '=', 'twc_rotating399').execute()).length, { timeout: 5000 })
      .toBe(1);
    await expect.poll(() => countRows(flooded, true)).toBeLessThanOrEqual(cap + cap / 10 - 1);
    // The newest failures are the ones kept (concurrent requests may be written in any order,
    // but not by more than the 20 sent at once), and the other rows all stay.
    const kept = await h.services.database.db.selectFrom('audit_log').select('client_id').where('action', '=', 'token.refused').execute();
    const sent = kept.map((r) => Number(/^twc_rotating(\d+)$/.exec(r.client_id ?? '')?.[1]));
    expect(Math.min(...sent)).toBeGreaterThanOrEqual(400 - 2 * cap);
    expect(await countRows(h, false)).toBeGreaterThanOrEqual(3);
  });
});

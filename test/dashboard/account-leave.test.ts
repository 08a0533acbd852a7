import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accountExportLines, EXPORT_KINDS, type ExportKind } from '../../src/domain/accounts/account-export.ts';
import { SqlAccountExportReader } from '../../src/store/repositories/account-export-reads.ts';
import { alertsSettled, fillAccount, type FilledAccount } from '../support/account-data.ts';
import { FAST_ALERTS } from '../support/alert-receiver.ts';
import { eventually } from '../support/eventually.ts';
import { sampleEvent, saveUnlimitedPlan, startHarness, type Harness } from '../support/harness.ts';
import { signedIn, WebClient } from './web-client.ts';

interface ExportLine {
  type: string;
  record?: Record<string, unknown>;
  counts?: Record<string, number>;
}

const linesOf = (text: string) => text.trimEnd().split('\n').map((line) => JSON.parse(line) as ExportLine);

/** An owner downloads everything the account holds and closes it (docs/dashboard.md, "Leaving"); a member can do neither. */
describe('leaving: the export and closing from the dashboard', () => {
  let h: Harness;
  let filled: FilledAccount;

  beforeAll(async () => {
    h = await startHarness({ TOLLWATCH_ALLOW_PRIVATE_TARGETS: 'on' }, { alerts: FAST_ALERTS });
    filled = await fillAccount(h, { events: 9 });
    await alertsSettled(h);
  });
  afterAll(async () => {
    await h?.close();
  });

  it('gives the owner everything the account holds as an NDJSON attachment, with no secret, and audits it', async () => {
    const id = filled.owner.account.account_id;
    const page = await filled.browser.get('/settings/account');
    expect(page.text).toContain('<a href="/settings/account/export" download>Download everything</a>');
    expect(page.text).toContain('<a href="/settings/account/close">Close this account…</a>');

    const res = await filled.browser.get('/settings/account/export');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/x-ndjson; charset=utf-8');
    expect(res.headers.get('content-disposition')).toBe(`attachment; filename="tollwatch-account-${id}.ndjson"`);
    const lines = linesOf(res.text);
    expect(lines[0]).toMatchObject({ type: 'export', format: 'tollwatch-account-export', version: 1, account_id: id });
    const manifest = lines.at(-1)!;
    expect(manifest.type).toBe('manifest');
    const body = lines.slice(1, -1);
    const of = (kind: ExportKind) => body.filter((line) => line.type === kind).map((line) => line.record!);
    for (const kind of EXPORT_KINDS) expect(manifest.counts![kind], kind).toBe(of(kind).length);
    expect(of('account')).toEqual([expect.objectContaining({ account_id: id, name: filled.owner.account.name })]);
    expect(of('user').map((u) => u.email).sort()).toEqual(filled.identifiers.filter((v) => v.includes('@')).sort());
    expect(of('client').map((c) => c.client_id).sort()).toEqual(filled.identifiers.filter((v) => v.startsWith('twc_')).sort());
    expect(of('event')).toHaveLength(9);
    expect(Object.keys(of('event')[0]!).sort()).toEqual(
      ['app_name', 'app_version', 'called_number', 'collected_method', 'created_by_node_id', 'destination_ip', 'event_time', 'event_timestamp', 'event_uuid', 'received_at', 'sip_message', 'sip_method', 'sip_user_agent', 'source_ip', 'transport_type'],
    );
    for (const kind of ['ingest_url', 'integration', 'node_name', 'allowlist_entry', 'report', 'alert', 'alert_delivery', 'delivery_attempt', 'audit', 'invitation'] as const) {
      expect(of(kind).length, kind).toBeGreaterThan(0);
    }
    expect(of('integration').find((i) => i.kind === 'webhook')).toMatchObject({ target: 'http://127.0.0.1:9/hook' });
    expect(of('integration').find((i) => i.kind === 'slack')).toMatchObject({ name: 'slack', target: null });
    // Not one secret or secret's hash the fixture made, anywhere in the file.
    for (const secret of filled.secrets) expect(res.text.includes(secret), `a secret in the export: ${secret.slice(0, 8)}…`).toBe(false);
    expect(res.text).not.toMatch(/secret_hash|password_hash|token_hash|id_hash|scrypt\$/);

    const audit = await h.services.audit.list({ accountId: id, limit: 5 });
    expect(audit.find((entry) => entry.action === 'account.exported')).toMatchObject({ actor: `user:${filled.identifiers[3]}`, detail: { format: 'tollwatch-account-export', version: 1 } });
  });

  it('streams an account of 20,000 events page by page: each page read only when the reader asks for more', async () => {
    const big = await h.account({ plan: await saveUnlimitedPlan(h) });
    for (let batch = 0; batch < 20; batch++) {
      const events = Array.from({ length: 1000 }, (_, i) => sampleEvent({ called_number: `+4420${String(batch * 1000 + i).padStart(7, '0')}` }));
      const res = await big.api('/api/events/batch', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(events) });
      expect(res.status).toBe(200);
    }
    const owner = await signedIn(h, big.account.account_id, 'owner');
    const res = await fetch(`${h.url}/settings/account/export`, { headers: { cookie: [...owner.browser.cookies].map(([k, v]) => `${k}=${v}`).join('; ') } });
    expect(res.status).toBe(200);
    // Sent as it is read: no length known in advance.
    expect(res.headers.get('content-length')).toBeNull();
    expect(res.headers.get('transfer-encoding')).toBe('chunked');
    const lines = linesOf(await res.text());
    const events = lines.filter((line) => line.type === 'event');
    expect(events).toHaveLength(20_000);
    expect(new Set(events.map((e) => e.record!.event_uuid)).size).toBe(20_000);
    expect(lines.at(-1)).toMatchObject({ type: 'manifest', counts: { event: 20_000 } });

    // The export pulls: a reader that has taken the first lines has had at most a page of events read for it.
    const reader = new SqlAccountExportReader(h.services.database.db, 1000);
    let pages = 0;
    const counting = { pages: (kind: ExportKind, accountId: string) => countPages(reader.pages(kind, accountId), kind === 'event' ? () => (pages += 1) : () => {}) };
    const lines2 = accountExportLines(counting, big.account.account_id);
    let seen = '';
    while (!seen.includes('"type":"event"')) seen += (await lines2.next()).value as string;
    expect(pages).toBe(1);
    await lines2.return(undefined);
    // 20,000 events submitted through the API take about a minute on PostgreSQL on a quiet two-core machine.
  }, 300_000);

  it('lets a member neither export nor close', async () => {
    const member = await signedIn(h, filled.owner.account.account_id, 'member');
    const page = await member.browser.get('/settings/account');
    expect(page.text).not.toContain('/settings/account/export');
    expect((await member.browser.get('/settings/account/export')).status).toBe(403);
    expect((await member.browser.get('/settings/account/close')).status).toBe(403);
    expect((await member.browser.post('/settings/account/close', { name: filled.owner.account.name, password: member.password })).status).toBe(403);
  });

  it('refuses a wrong name or password with the form again (422), and closes on both right: signed out, refused, erased', async () => {
    const id = filled.owner.account.account_id;
    const browser = filled.browser;
    const asked = await browser.get('/settings/account/close');
    expect(asked.status).toBe(200);
    expect(asked.text).toContain('<label for="close-name">');
    expect(asked.text).toContain('<label for="close-password">Your password</label>');

    const wrongName = await browser.post('/settings/account/close', { name: 'not the name', password: filled.ownerPassword });
    expect(wrongName.status).toBe(422);
    expect(wrongName.text).toContain('The name typed does not match the account’s name.');
    expect(wrongName.text).toContain('aria-invalid="true" aria-describedby="name-error"');
    const wrongPassword = await browser.post('/settings/account/close', { name: filled.owner.account.name, password: 'not my password' });
    expect(wrongPassword.status).toBe(422);
    expect(wrongPassword.text).toContain('Your password is not right.');
    expect(wrongPassword.text).not.toContain('name-error');
    // Without the form's token: refused before anything is read.
    expect((await browser.post('/settings/account/close', { name: filled.owner.account.name, password: filled.ownerPassword }, 'forged')).status).toBe(403);
    expect((await h.services.accounts.getAccount(id)).disabled).toBe(false);

    const token = await filled.owner.token();
    const closed = await browser.post('/settings/account/close', { name: filled.owner.account.name, password: filled.ownerPassword });
    expect(closed.status).toBe(200);
    expect(closed.text).toContain('The account is closed');
    expect(browser.cookies.has('tw_session')).toBe(false);
    // At once: the token issued before, and the owner's session.
    expect((await fetch(`${h.url}/api/events?limit=1`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(401);
    expect((await browser.get('/overview')).status).toBe(303);
    await eventually('the account erased', () => h.services.accountClosing.progress(id), (progress) => progress === undefined);
    await expect(h.services.accounts.getAccount(id)).rejects.toThrow('no such account');
    expect((await new WebClient(h.url).signIn(filled.ownerEmail, filled.ownerPassword)).status).toBe(401);
    const entries = await h.services.audit.list({ accountId: id, limit: 10 });
    expect(entries.filter((e) => e.action === 'account.closed')).toHaveLength(1);
    expect(entries.find((e) => e.action === 'account.closed')).toMatchObject({ action: 'account.closed', actor: 'owner', client_id: null, ip: null });
  });
});

async function* countPages<T>(pages: AsyncIterable<T>, counted: () => void): AsyncGenerator<T> {
  for await (const page of pages) {
    counted();
    yield page;
  }
}

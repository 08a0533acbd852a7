import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ago, postEvent, sampleEvent, startHarness, type Harness, type TestAccount } from '../support/harness.ts';
import { cliEnvironment, runCliHere } from '../support/in-process-cli.ts';
import { startMailCatcher, type MailCatcher } from '../support/mail-catcher.ts';
import { eventually } from '../support/eventually.ts';
import { signedIn } from './web-client.ts';

/** The body of a mail as text: quoted-printable soft breaks joined. */
const bodyOf = (raw: string) => raw.replace(/=\r?\n/g, '').replace(/=3D/g, '=');

/**
 * Becoming a contributor (docs/dashboard.md): an owner asks, the operator is mailed and approves
 * (the plan changes, the owners are mailed) or declines with a reason; one open request per
 * account; `automatic` approves at once; the CLI decides the same queue.
 */
describe('contributor requests', () => {
  let h: Harness;
  let mail: MailCatcher;
  let operator: Awaited<ReturnType<typeof signedIn>>;
  const mailsTo = (email: string) => mail.mails.filter((m) => m.to.includes(email));
  const auditOf = async (accountId: string) => (await h.services.audit.list({ accountId, limit: 50 })).map((a) => a.action);

  beforeAll(async () => {
    mail = await startMailCatcher();
    h = await startHarness({ TOLLWATCH_SMTP_URL: mail.url, TOLLWATCH_MAIL_FROM: 'tollwatch@tollwatch.test' });
    operator = await signedIn(h, null, 'operator');
  });
  afterAll(async () => {
    await h?.close();
    await mail?.close();
  });

  it('mails the operators a request, one open at a time; approving moves the account to the contributor plan and mails its owner', async () => {
    const account = await h.account({ plan: 'tester' });
    const owner = await signedIn(h, account.account.account_id, 'owner');
    const page = await owner.browser.get('/settings/account');
    expect(page.text).toContain('Ask for the contributor plan');
    expect((await owner.browser.post('/settings/account/contributor', { honeypots: 'Two SentryPeer nodes <in Stockholm>' })).status).toBe(303);
    const [told] = await eventually('the operator’s mail', () => mailsTo(operator.email), (m) => m.length === 1);
    expect(bodyOf(told!.raw)).toContain('Two SentryPeer nodes <in Stockholm>');
    // A second request while one is open is refused, and nothing new is stored.
    expect((await owner.browser.post('/settings/account/contributor', { honeypots: 'again' })).status).toBe(422);
    expect((await h.services.contributorRequests.list('open')).filter((r) => r.account_id === account.account.account_id)).toHaveLength(1);
    expect((await owner.browser.get('/settings/account')).text).toContain('the operator has not decided yet');

    const queue = await operator.browser.get('/operator/contributors');
    expect(queue.text).toContain('Two SentryPeer nodes &#60;in Stockholm&#62;');
    const [open] = (await h.services.contributorRequests.list('open')).filter((r) => r.account_id === account.account.account_id);
    expect((await operator.browser.post(`/operator/contributors/${open!.request_id}/approve`)).status).toBe(303);
    expect((await h.services.accounts.getAccount(account.account.account_id)).plan).toBe('contributor');
    const [decided] = await eventually('the owner’s mail', () => mailsTo(owner.email), (m) => m.length === 1);
    expect(bodyOf(decided!.raw)).toContain('approved');
    expect(await auditOf(account.account.account_id)).toEqual(expect.arrayContaining(['contributor.requested', 'contributor.approved', 'account.plan_changed']));
    // Decided once: approving or declining again is refused.
    await operator.browser.get('/operator/contributors');
    expect((await operator.browser.post(`/operator/contributors/${open!.request_id}/approve`)).status).toBe(422);
    expect((await operator.browser.post(`/operator/contributors/${open!.request_id}/decline`, { reason: 'late' })).status).toBe(422);
    // A contributor asks no more.
    expect((await owner.browser.get('/settings/account')).text).toContain('This account is on the contributor plan');
  });

  it('declines with a reason the owner is mailed and shown, keeping the plan; a member cannot ask', async () => {
    const account = await h.account({ plan: 'tester' });
    const owner = await signedIn(h, account.account.account_id, 'owner');
    const member = await signedIn(h, account.account.account_id, 'member');
    await member.browser.get('/settings/account');
    expect((await member.browser.post('/settings/account/contributor', { honeypots: 'mine' })).status).toBe(403);
    await owner.browser.get('/settings/account');
    expect((await owner.browser.post('/settings/account/contributor', { honeypots: '   ' })).status).toBe(422);
    expect((await owner.browser.post('/settings/account/contributor', { honeypots: 'One Asterisk box' })).status).toBe(303);
    const [request] = (await h.services.contributorRequests.list('open')).filter((r) => r.account_id === account.account.account_id);
    await operator.browser.get('/operator/contributors');
    expect((await operator.browser.post(`/operator/contributors/${request!.request_id}/decline`, { reason: '' })).status).toBe(422);
    expect((await operator.browser.post(`/operator/contributors/${request!.request_id}/decline`, { reason: 'Tell us <more> first' })).status).toBe(303);
    expect((await h.services.accounts.getAccount(account.account.account_id)).plan).toBe('tester');
    const [decided] = await eventually('the owner’s mail', () => mailsTo(owner.email), (m) => m.length === 1);
    expect(bodyOf(decided!.raw)).toContain('Tell us <more> first');
    const shown = (await owner.browser.get('/settings/account')).text;
    expect(shown).toContain('Tell us &#60;more&#62; first');
    expect(shown).toContain('Ask for the contributor plan');
    expect(await auditOf(account.account.account_id)).toEqual(expect.arrayContaining(['contributor.requested', 'contributor.declined']));
    expect(await auditOf(account.account.account_id)).not.toContain('account.plan_changed');
  });

  it('lists, approves and declines from the CLI', async () => {
    cliEnvironment({ DATABASE_URL: h.config.databaseUrl, TOLLWATCH_PUBLIC_URL: 'http://tollwatch.test', LOG_LEVEL: 'silent' });
    const accounts = [await h.account({ plan: 'tester' }), await h.account({ plan: 'tester' })];
    const owners = await Promise.all(accounts.map((a) => signedIn(h, a.account.account_id, 'owner')));
    for (const o of owners) {
      await o.browser.get('/settings/account');
      expect((await o.browser.post('/settings/account/contributor', { honeypots: `nodes of ${o.email}` })).status).toBe(303);
    }
    const listed = await runCliHere(['--json', 'contributors', 'list']);
    expect(listed.status).toBe(0);
    const ids = accounts.map((a) => (JSON.parse(listed.stdout).requests as Array<{ request_id: string; account_id: string }>).find((r) => r.account_id === a.account.account_id)!.request_id);
    expect((await runCliHere(['contributors', 'approve', ids[0]!])).status).toBe(0);
    // No reason: a usage error, and the request stays open.
    expect((await runCliHere(['contributors', 'decline', ids[1]!])).status).toBe(2);
    expect((await runCliHere(['contributors', 'decline', ids[1]!, '--reason', ' '])).status).toBe(1);
    expect((await h.services.contributorRequests.list('open')).map((r) => r.request_id)).toContain(ids[1]);
    expect((await runCliHere(['contributors', 'decline', ids[1]!, '--reason', 'no nodes yet'])).status).toBe(0);
    expect((await h.services.accounts.getAccount(accounts[0]!.account.account_id)).plan).toBe('contributor');
    expect((await h.services.accounts.getAccount(accounts[1]!.account.account_id)).plan).toBe('tester');
    const late = await runCliHere(['contributors', 'approve', ids[1]!]);
    expect(late.status).toBe(1);
    expect(late.stderr).toMatch(/^tollwatch: this request is declined already/);
    expect((await h.services.accounts.getAccount(accounts[1]!.account.account_id)).plan).toBe('tester');
    expect((await runCliHere(['contributors', 'list', '--status', 'pending'])).status).toBe(1);
    expect((await runCliHere(['contributors', 'approve', 'no-such-request'])).status).toBe(1);
  });
});

describe('contributor requests approved automatically (TOLLWATCH_CONTRIBUTOR_APPROVAL=automatic)', () => {
  it('moves the account at once, mails its owner, and troubles no operator', async () => {
    const mail = await startMailCatcher();
    const h = await startHarness({ TOLLWATCH_SMTP_URL: mail.url, TOLLWATCH_CONTRIBUTOR_APPROVAL: 'automatic' });
    try {
      const operator = await signedIn(h, null, 'operator');
      const account = await h.account({ plan: 'tester' });
      const owner = await signedIn(h, account.account.account_id, 'owner');
      await owner.browser.get('/settings/account');
      expect((await owner.browser.post('/settings/account/contributor', { honeypots: 'a Kamailio honeypot' })).status).toBe(303);
      expect((await h.services.accounts.getAccount(account.account.account_id)).plan).toBe('contributor');
      await eventually('the owner’s mail', () => mail.mails.filter((m) => m.to.includes(owner.email)), (m) => m.length === 1);
      const [request] = await h.services.contributorRequests.list();
      expect(request).toMatchObject({ status: 'approved', decided_by: 'automatic' });
      expect(mail.mails.filter((m) => m.to.includes(operator.email))).toEqual([]);
    } finally {
      await h.close();
      await mail.close();
    }
  });
});

/**
 * The contributors' board: trusted accounts' events and distinct numbers over 30 days, named only
 * by an alias their owner chose; the rest summed as "others"; untrusted accounts not at all.
 */
describe('the contributors’ board', () => {
  let h: Harness;
  let named: TestAccount;
  let second: TestAccount;
  let unnamed: TestAccount;
  let untrusted: TestAccount;
  let hostile: TestAccount;
  let viewer: Awaited<ReturnType<typeof signedIn>>;

  async function post(who: TestAccount, numbers: string[]) {
    for (const called_number of numbers) expect((await postEvent(who, sampleEvent({ called_number }))).status).toBeLessThan(300);
  }

  beforeAll(async () => {
    h = await startHarness();
    [named, second, unnamed, untrusted, hostile] = await Promise.all([
      h.account({ plan: 'contributor', trusted: true }),
      h.account({ plan: 'contributor', trusted: true }),
      h.account({ plan: 'contributor', trusted: true }),
      h.account({ plan: 'contributor', trusted: false }),
      h.account({ plan: 'contributor', trusted: true }),
    ]);
    await post(named, ['0046812118532', '0046812118532', '0046812118533']);
    // Forty days old: outside the board's 30 days, so neither it nor its number counts.
    expect((await postEvent(named, sampleEvent({ called_number: '0046812118599', event_timestamp: ago(40 * 24 * 60) }))).status).toBeLessThan(300);
    await post(second, ['0046812118540']);
    await post(unnamed, ['0046812118550', '0046812118551', '0046812118552', '0046812118553']);
    await post(untrusted, ['0046812118560', '0046812118561', '0046812118562', '0046812118563', '0046812118564']);
    await post(hostile, ['0046812118570', '0046812118571']);
    // An alias stored before today's rules, which would refuse it: the page must still escape it.
    await h.services.database.db.insertInto('board_aliases').values({ account_id: hostile.account.account_id, alias: '<script>alert(1)</script>', alias_key: '<script>alert(1)</script>', created_at: new Date().toISOString() }).execute();
    viewer = await signedIn(h, second.account.account_id, 'member');
  });
  afterAll(() => h?.close());

  it('names opted-in trusted accounts by alias, ranked; sums the rest as others; leaves untrusted accounts out', async () => {
    const owner = await signedIn(h, named.account.account_id, 'owner');
    await owner.browser.get('/settings/account');
    expect((await owner.browser.post('/settings/account/board', { join: 'yes', alias: '  Nordic   Honeypots ' })).status).toBe(303);
    const secondOwner = await signedIn(h, second.account.account_id, 'owner');
    await secondOwner.browser.get('/settings/account');
    expect((await secondOwner.browser.post('/settings/account/board', { join: 'yes', alias: 'Lone Pot' })).status).toBe(303);
    expect((await owner.browser.get('/settings/account')).text).toContain('as <strong>Nordic Honeypots</strong>');

    const page = await viewer.browser.get('/contributors');
    expect(page.status).toBe(200);
    const rows = [...page.text.matchAll(/<tr>(?:<td>(\d+)<\/td>)<th scope="row">([^<]*(?:&#60;[^<]*)*)<\/th><td>([\d,]+)<\/td><td>([\d,]+)<\/td><\/tr>/g)].map((m) => [m[1], m[2], m[3], m[4]]);
    expect(rows).toEqual([
      ['1', 'Nordic Honeypots', '3', '2'],
      ['2', '&#60;script&#62;alert(1)&#60;/script&#62;', '2', '2'],
      ['3', 'Lone Pot', '1', '1'],
    ]);
    expect(page.text).not.toContain('<script>alert');
    expect(page.text).toContain('Others (1 account not on the board)</th><td>4</td><td>4</td>');
    for (const hidden of [unnamed, untrusted]) {
      expect(page.text).not.toContain(hidden.account.name);
      expect(page.text).not.toContain(hidden.account.account_id);
    }
    // The untrusted account's five events are in no line.
    expect(page.text).not.toMatch(/<td>5<\/td>/);
  });

  it('keeps aliases unique without regard to case, refuses malformed and reserved ones, and lets an owner leave', async () => {
    const owner = await signedIn(h, unnamed.account.account_id, 'owner');
    await owner.browser.get('/settings/account');
    await owner.browser.post('/settings/account/board', { join: 'yes', alias: 'Taken Name' });
    const other = await signedIn(h, untrusted.account.account_id, 'owner');
    await other.browser.get('/settings/account');
    const taken = await other.browser.post('/settings/account/board', { join: 'yes', alias: 'taken NAME' });
    expect(taken.status).toBe(422);
    expect(taken.text).toContain('The alias is taken.');
    for (const alias of ['<b>x</b>', 'ab', 'x'.repeat(33), 'Others', ' -dash', '']) {
      const refused = await other.browser.post('/settings/account/board', { join: 'yes', alias });
      expect(refused.status, alias).toBe(422);
    }
    expect(await h.services.contributorsBoard.aliasOf(untrusted.account.account_id)).toBeUndefined();
    // The owner keeps their own alias when they set it again in another case.
    expect((await owner.browser.post('/settings/account/board', { join: 'yes', alias: 'TAKEN name' })).status).toBe(303);
    expect((await owner.browser.post('/settings/account/board', { join: 'no' })).status).toBe(303);
    expect(await h.services.contributorsBoard.aliasOf(unnamed.account.account_id)).toBeUndefined();
    expect((await viewer.browser.get('/contributors')).text).not.toContain('TAKEN name');
    const actions = (await h.services.audit.list({ accountId: unnamed.account.account_id, limit: 20 })).map((a) => a.action);
    expect(actions).toEqual(expect.arrayContaining(['board.joined', 'board.left']));
    // A member reads the board but cannot choose the alias.
    await viewer.browser.get('/settings/account');
    expect((await viewer.browser.post('/settings/account/board', { join: 'yes', alias: 'Member Made' })).status).toBe(403);
  });
});

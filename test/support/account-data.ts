import { createHash } from 'node:crypto';
import { Secret, TOTP } from 'otpauth';
import { sql, type Kysely } from 'kysely';
import type { Schema } from '../../src/store/schema.ts';
import { makeUser, WebClient } from '../dashboard/web-client.ts';
import { eventually } from './eventually.ts';
import { postEvent, sampleEvent, type Harness, type TestAccount } from './harness.ts';

/** An account holding a row in every table an account can fill, and what names it. */
export interface FilledAccount {
  owner: TestAccount;
  /** Values that mark a row as this account's: its id, its users' and clients' ids, its users' addresses. */
  identifiers: string[];
  /** Every secret and secret's hash the fixture made: none may appear in an export. */
  secrets: string[];
  ownerEmail: string;
  ownerPassword: string;
  /** A browser signed in as the owner. */
  browser: WebClient;
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/**
 * Fills an account through the services and the API as its owner would: clients, users signed
 * in (sessions), an invitation, an ingest URL, a webhook with a test alert, a named node, an
 * allowlist entry, a report, a failed sign-in naming an address, the member's two-factor sign-in
 * (recovery codes, a second step under way), a link to an OpenID provider, a contributor request,
 * a board alias, a sign-up waiting under a user's address, and `events` events (own scope;
 * with `trustedEvents`, that many more after it became trusted, into the shared data set).
 */
export async function fillAccount(h: Harness, options: { events?: number; trustedEvents?: number } = {}): Promise<FilledAccount> {
  const s = h.services;
  const owner = await h.account();
  const id = owner.account.account_id;
  const second = await s.accounts.createClient({ accountId: id, name: 'second client' });
  const ownerUser = await makeUser(h, id, 'owner');
  const member = await makeUser(h, id, 'member');
  const invited = await s.users.invite({ accountId: id, email: `invited-${id.slice(0, 8)}@example.test`, role: 'member' });
  const browser = new WebClient(h.url);
  if ((await browser.signIn(ownerUser.email, ownerUser.password)).status !== 303) throw new Error('owner sign-in failed');
  const memberBrowser = new WebClient(h.url);
  if ((await memberBrowser.signIn(member.email, member.password)).status !== 303) throw new Error('member sign-in failed');
  // A failed sign-in: its audit row names the address and no account.
  await new WebClient(h.url).signIn(member.email, 'not the password');
  const ingest = await s.ingestUrls.create({ accountId: id, name: 'node ingest' });
  const webhook = await s.integrations.create(owner.account, { kind: 'webhook', name: 'hook', url: 'http://127.0.0.1:9/hook' }, `user:${ownerUser.user.user_id}`);
  await s.integrations.test(id, webhook.id);
  // A Slack URL is a credential: shown to nobody once saved.
  const slackUrl = `http://127.0.0.1:9/services/T0/B0/slack-${id.slice(0, 8)}`;
  await s.integrations.create(owner.account, { kind: 'slack', name: 'slack', url: slackUrl }, `user:${ownerUser.user.user_id}`);
  await s.activity.nameNode(owner.account, '732e7f50-637d-4fde-81e0-5c32f1bb5a92', 'node by the door', `user:${ownerUser.user.user_id}`);
  await s.allowlists.add(id, { kind: 'phone_number', value: '+15550001111', note: 'our own line' }, `user:${ownerUser.user.user_id}`);
  await s.reports.submit(owner.account, { phone_number: '+15550002222', reason: 'own_number', note: 'ours' }, `client:${owner.clientId}`);
  // The member signs in with a second factor and has a second step under way; the owner's link to
  // an OpenID provider, a request for the contributor plan and a sign-up waiting under the
  // member's address are written as those flows store them (the account is on that plan already,
  // and this server has no provider or open sign-up).
  const memberUser = await s.users.getUser(member.user.user_id);
  const { secret: totpSecret } = await s.twoFactor.start(memberUser);
  const recoveryCodes = await s.twoFactor.confirm(memberUser, TOTP.generate({ secret: Secret.fromBase32(totpSecret) }));
  const pendingToken = await s.pendingSignIns.start(member.user.user_id, '/', 'password');
  const now = new Date().toISOString();
  const db = s.database.db;
  await db.insertInto('oidc_identities').values({ issuer: 'https://sso.example.com', subject: `sub-${id}`, user_id: ownerUser.user.user_id, created_at: now }).execute();
  await db
    .insertInto('contributor_requests')
    .values({ request_id: crypto.randomUUID(), account_id: id, user_id: ownerUser.user.user_id, honeypots: 'two SentryPeer nodes', status: 'open', reason: null, created_at: now, decided_at: null, decided_by: null })
    .execute();
  const signUpToken = `sign-up-${id}`;
  await db
    .insertInto('sign_ups')
    .values({ token_hash: sha256(signUpToken), email: member.email, account_name: 'again', password_hash: 'scrypt$not-used', ip: '192.0.2.1', created_at: now, expires_at: now, used_at: null })
    .execute();
  await s.contributorsBoard.join(await s.users.getUser(ownerUser.user.user_id), `Board ${id.slice(0, 8)}`);
  await postEvents(owner, options.events ?? 5, 'own');
  if (options.trustedEvents) {
    // Folded first: the fold counts an event where its account's trust says when it folds it.
    await h.settled();
    await s.accounts.setTrusted(id, true);
    await postEvents(owner, options.trustedEvents, 'shared');
  }
  await h.settled();
  await s.clientActivity.flush();
  const ingestSecret = ingest.ingest_url.split('/').pop()!;
  const storedWebhookSecret = (await h.services.database.db.selectFrom('integrations').select('secret').where('id', '=', webhook.id).executeTakeFirstOrThrow()).secret!;
  const passwordHashes = (await h.services.database.db.selectFrom('users').select('password_hash').where('account_id', '=', id).execute()).map((u) => u.password_hash!).filter(Boolean);
  const sessionHashes = (await h.services.database.db.selectFrom('user_sessions').select('id_hash').where('user_id', 'in', [ownerUser.user.user_id, member.user.user_id]).execute()).map((r) => r.id_hash);
  const invitationHashes = (await h.services.database.db.selectFrom('user_invitations').select('token_hash').where('user_id', '=', invited.user.user_id).execute()).map((r) => r.token_hash);
  const invitationToken = invited.link.split('/').pop()!;
  const sealedTotp = (await db.selectFrom('user_two_factor').select('secret').where('user_id', '=', member.user.user_id).executeTakeFirstOrThrow()).secret;
  return {
    owner,
    identifiers: [id, owner.clientId, second.client_id, ownerUser.user.user_id, member.user.user_id, invited.user.user_id, ownerUser.email, member.email, invited.user.email],
    secrets: [
      owner.clientSecret,
      sha256(owner.clientSecret),
      second.client_secret,
      sha256(second.client_secret),
      ingestSecret,
      sha256(ingestSecret),
      webhook.secret!,
      slackUrl,
      storedWebhookSecret,
      ownerUser.password,
      member.password,
      invitationToken,
      totpSecret,
      sealedTotp,
      ...recoveryCodes,
      pendingToken,
      sha256(pendingToken),
      signUpToken,
      sha256(signUpToken),
      ...passwordHashes,
      ...sessionHashes,
      ...invitationHashes,
      ...[...browser.cookies.values()],
      ...[...memberBrowser.cookies.values()],
    ],
    ownerEmail: ownerUser.email,
    ownerPassword: ownerUser.password,
    browser,
  };
}

/** Posts `count` events to numbers of their own (one number per 50 events), through the API. */
export async function postEvents(who: TestAccount, count: number, tag: string): Promise<void> {
  const salt = who.account.account_id.replace(/\D/g, '').slice(0, 5).padEnd(5, '7');
  for (let i = 0; i < count; i++) {
    const res = await postEvent(who, sampleEvent({ called_number: `0046${salt}${tag === 'own' ? 1 : 2}${String(i % 7).padStart(3, '0')}`, source_ip: `198.18.${i % 5}.${(i % 200) + 1}` }));
    if (res.status !== 201) throw new Error(`event refused: ${res.status} ${await res.text()}`);
  }
}

/**
 * Waits until the alert worker has nothing left to do (every alert fanned out, every delivery
 * delivered or given up), so a snapshot of the store stays as it is while nothing else happens.
 */
export async function alertsSettled(h: Harness): Promise<void> {
  const db = h.services.database.db;
  await eventually(
    'the alert outbox to settle',
    async () => {
      const alerts = await db.selectFrom('alerts').select('id').where('state', '=', 'new').execute();
      const deliveries = await db.selectFrom('alert_deliveries').select('id').where('status', '=', 'pending').execute();
      return alerts.length + deliveries.length;
    },
    (left) => left === 0,
  );
}

/** Every table of the store's catalog with its columns: sqlite_master where there is one, else information_schema. */
export async function catalog(db: Kysely<Schema>): Promise<Map<string, string[]>> {
  const tables = new Map<string, string[]>();
  let names: string[];
  try {
    names = (await sql<{ name: string }>`select name from sqlite_master where type = 'table' and name not like 'sqlite_%'`.execute(db)).rows.map((r) => r.name);
    for (const name of names) tables.set(name, (await sql<{ name: string }>`select name from pragma_table_info(${name})`.execute(db)).rows.map((r) => r.name));
  } catch {
    const rows = await sql<{ table_name: string; column_name: string }>`select c.table_name, c.column_name from information_schema.columns c
      join information_schema.tables t on t.table_schema = c.table_schema and t.table_name = c.table_name
      where c.table_schema = current_schema() and t.table_type = 'BASE TABLE' order by c.table_name, c.ordinal_position`.execute(db);
    for (const row of rows.rows) tables.set(row.table_name, [...(tables.get(row.table_name) ?? []), row.column_name]);
  }
  return tables;
}

/** The rows of `table` in which any column's text holds any of `values`, as JSON lines, sorted. */
export async function rowsMentioning(db: Kysely<Schema>, table: string, columns: string[], values: string[]): Promise<string[]> {
  const tests = columns.flatMap((column) => values.map((value) => sql`cast(${sql.ref(column)} as text) like ${`%${value}%`}`));
  const { rows } = await sql<Record<string, unknown>>`select * from ${sql.table(table)} where ${sql.join(tests, sql` or `)}`.execute(db);
  return rows.map((row) => JSON.stringify(row)).sort();
}

import { execFile } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PrometheusMetrics } from '../../src/metrics/prometheus-metrics.ts';
import { signedIn } from '../dashboard/web-client.ts';
import { startHarness, type Harness } from '../support/harness.ts';

const TAXII = 'application/taxii+json;version=2.1';
const COLLECTION = 'c9f1e1d4-7d52-4a59-9ec1-7f0a3f7f9e01';
const T0 = '2026-01-01T00:00:00.000Z';
const BIN = new URL('../../bin/tollwatch.js', import.meta.url).pathname;
const SECRET = 'peer-secret-never-printed-0123456789';
type Json = Record<string, any>;

const indicator = (n: number, pattern: string): Json => ({
  type: 'indicator',
  spec_version: '2.1',
  id: `indicator--00000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
  created: T0,
  modified: T0,
  valid_from: T0,
  pattern,
  pattern_type: 'stix',
  confidence: 80,
});

/**
 * The operator's side of peers (docs/federation.md): the `tollwatch peers` commands on the store
 * a server runs on, the /operator/peers page, and each peer's status in /metrics.
 */
describe('managing peers: CLI, operator page and metrics', () => {
  let h: Harness;
  let peer: http.Server;
  let root: string;
  const authorizations: string[] = [];

  /**
   * Runs the real `tollwatch` executable as an operator would, the credential in a variable;
   * without blocking this process, whose peer the command asks.
   */
  const tollwatch = (...args: string[]) =>
    new Promise<{ status: number; stdout: string; stderr: string }>((resolve) => {
      execFile(process.execPath, [BIN, ...args], { env: { ...process.env, DATABASE_URL: h.config.databaseUrl, LOG_LEVEL: 'silent', PEER_SECRET: SECRET }, encoding: 'utf8', timeout: 60_000 }, (err, stdout, stderr) => {
        expect(stdout + stderr).not.toContain(SECRET);
        resolve({ status: err ? Number((err as { code?: unknown }).code ?? 1) : 0, stdout, stderr });
      });
    });

  beforeAll(async () => {
    peer = http.createServer((req, res) => {
      authorizations.push(String(req.headers.authorization));
      const path = new URL(req.url ?? '/', 'http://peer.test').pathname;
      const body =
        path === '/api/'
          ? { title: 'A fellow operator', versions: [TAXII] }
          : path === '/api/collections/'
            ? { collections: [{ id: COLLECTION, alias: 'numbers', title: 'Numbers', can_read: true }, { id: 'c2', title: 'Private', can_read: false }] }
            : path === `/api/collections/${COLLECTION}/objects/`
              ? { objects: [indicator(1, "[x-tollwatch-phone-number:value = '+46812118532']"), indicator(2, "[ipv4-addr:value = '198.51.100.9']"), indicator(3, "[url:value = 'http://x.test/']")] }
              : undefined;
      if (!body) return res.writeHead(404, { 'content-type': TAXII }).end('{}');
      res.writeHead(200, { 'content-type': TAXII }).end(JSON.stringify(body));
    });
    await new Promise<void>((resolve) => peer.listen(0, '127.0.0.1', resolve));
    root = `http://127.0.0.1:${(peer.address() as AddressInfo).port}/api/`;
    h = await startHarness({ TOLLWATCH_TAXII_PUBLISH_INTERVAL: '3600' }, { metrics: new PrometheusMetrics(), federation: { tickMs: 3_600_000, timeoutMs: 2000 } });
  });
  afterAll(async () => {
    await h?.close();
    await new Promise((resolve) => peer?.close(resolve));
  });

  it('adds, polls, lists and removes a peer from the command line, never printing its secret', async () => {
    const added = await tollwatch('peers', 'add', '--name', 'fellow', '--api-root', root, '--collections', 'numbers', '--auth', 'basic', '--username', 'client-1', '--credential-env', 'PEER_SECRET', '--trust', '0.7');
    expect(added.stderr).toBe('');
    expect(added.status).toBe(0);
    expect(added.stdout).toContain('found: A fellow operator at ' + root);
    expect(added.stdout).toMatch(new RegExp(`collection ${COLLECTION} \\(numbers\\)  Numbers  can_read`));
    expect(added.stdout).toMatch(/collection c2 {2}Private {2}cannot read/);
    expect(authorizations.at(-1)).toBe(`Basic ${Buffer.from(`client-1:${SECRET}`).toString('base64')}`);

    const polled = await tollwatch('--json', 'peers', 'poll-now', 'fellow');
    expect(polled.status).toBe(0);
    expect(JSON.parse(polled.stdout).outcome).toEqual({ ok: true, pages: 1, objects_read: 3, objects_accepted: 2, objects_skipped: 1, objects_refused: 0 });

    const set = await tollwatch('--json', 'peers', 'set', 'fellow', '--trust', '0.9', '--republish');
    expect(set.status).toBe(0);
    expect(JSON.parse(set.stdout).peer).toMatchObject({ trust: 0.9, republish: true, poll_seconds: 300 });

    const listed = await tollwatch('--json', 'peers', 'list');
    expect(listed.status).toBe(0);
    const [shown] = JSON.parse(listed.stdout).peers as Json[];
    expect(shown).toMatchObject({
      name: 'fellow',
      api_root: root,
      collections: [COLLECTION],
      auth: 'basic',
      username: 'client-1',
      has_credential: true,
      trust: 0.9,
      poll_seconds: 300,
      republish: true,
      enabled: true,
      status: { failures: 0, polling: false, objects_read: 3, objects_accepted: 2, objects_skipped: 1, objects_refused: 0, last_error: null },
    });
    expect(shown!.status.last_success_at).toEqual(expect.any(String));

    // Its status in /metrics, read from the store at the scrape.
    const metrics = await (await fetch(`${h.url}/metrics`)).text();
    expect(metrics).toContain('tollwatch_peer_objects_total{peer="fellow",outcome="accepted"} 2');
    expect(metrics).toContain('tollwatch_peer_objects_total{peer="fellow",outcome="skipped"} 1');
    expect(metrics).toContain('tollwatch_peer_objects_total{peer="fellow",outcome="refused"} 0');
    expect(metrics).toMatch(new RegExp(`tollwatch_peer_last_success_timestamp_seconds\\{peer="fellow"\\} ${Math.floor(Date.parse(shown!.status.last_success_at) / 1000)}`));

    // Removed, its indicators stay as revoked rows with new seqs, so servers reading what changed drop them.
    const db = h.services.database.db;
    const before = await db.selectFrom('peer_indicators').select(['object_id', 'seq', 'revoked']).where('peer_id', '=', shown!.peer_id).orderBy('object_id').execute();
    expect(before.map((r) => Number(r.revoked))).toEqual([0, 0]);
    const removed = await tollwatch('--json', 'peers', 'remove', 'fellow');
    expect(removed.status).toBe(0);
    expect(JSON.parse(removed.stdout)).toEqual({ peer_id: shown!.peer_id, name: 'fellow', removed: true, indicators_revoked: 2 });
    const after = await db.selectFrom('peer_indicators').select(['object_id', 'seq', 'revoked']).where('peer_id', '=', shown!.peer_id).orderBy('object_id').execute();
    expect(after.map((r) => Number(r.revoked))).toEqual([1, 1]);
    const top = Math.max(...before.map((r) => Number(r.seq)));
    expect(after.every((r) => Number(r.seq) > top)).toBe(true);
    expect(await db.selectFrom('peer_positions').selectAll().where('peer_id', '=', shown!.peer_id).execute()).toEqual([]);
    await expect(h.services.peers.show('fellow')).rejects.toThrow('no peer fellow');
    expect((await h.services.audit.list({ limit: 20 })).filter((a) => a.action.startsWith('peer.')).map((a) => [a.action, a.actor])).toEqual([
      ['peer.removed', 'operator'],
      ['peer.changed', 'operator'],
      ['peer.added', 'operator'],
    ]);
  });

  it('lists, adds, disables, enables and removes peers on /operator/peers, for the operator only', async () => {
    const { browser } = await signedIn(h, null, 'operator');
    expect((await browser.get('/operator/peers')).text).toContain('No peers.');
    const refused = await browser.post('/operator/peers', { name: 'nowhere', api_root: `${root}missing/`, auth: 'none', trust: '0.5', poll_seconds: '300' });
    expect(refused.status).toBe(422);
    expect(refused.text).toContain('answered 404');
    await browser.get('/operator/peers');
    const page = await browser.submit('/operator/peers', { name: 'web-peer', api_root: root, auth: 'bearer', credential: SECRET, trust: '0.25', poll_seconds: '600', collections: '' });
    expect(page.status).toBe(200);
    expect(page.text).toContain('web-peer');
    expect(page.text).toContain(root);
    expect(page.text).not.toContain(SECRET);
    const peer = await h.services.peers.show('web-peer');
    expect(peer).toMatchObject({ auth: 'bearer', trust: 0.25, pollSeconds: 600, collections: [COLLECTION], enabled: true });
    expect((await browser.submit(`/operator/peers/${peer.id}/disable`)).text).toContain('disabled');
    expect((await h.services.peers.show('web-peer')).enabled).toBe(false);
    await browser.submit(`/operator/peers/${peer.id}/enable`);
    expect((await h.services.peers.show('web-peer')).enabled).toBe(true);
    await browser.submit(`/operator/peers/${peer.id}/poll`);
    expect(Date.parse((await h.services.peers.show('web-peer')).status.nextPollAt!)).toBeLessThanOrEqual(Date.now());
    await expect(h.services.peers.change('web-peer', { trust: '1.5' }, 'operator')).rejects.toThrow(/trust must be a number from 0 to 1/);
    await expect(h.services.peers.change('web-peer', {}, 'operator')).rejects.toThrow(/nothing to change/);
    expect((await browser.submit(`/operator/peers/${peer.id}/remove`)).text).toContain('No peers.');

    const { browser: owner } = await signedIn(h, (await h.account()).account.account_id, 'owner');
    expect((await owner.get('/operator/peers')).status).toBe(403);
  });
});

import { createServer } from 'node:http';
import { listenAsBaseline } from './baseline-listen.ts';
import Database from 'better-sqlite3';
import { decodeJwt } from 'jose';
import { normalisePhoneNumber, phoneNumberFacts } from '../../src/domain/phone-number.ts';
import { DEFAULT_SCORING, scoreOfNumber } from '../../src/domain/intelligence/scores.ts';
import { SHARED_SCOPE } from '../../src/domain/visibility.ts';
import { numberAggregateOf, type LookupRow } from '../../src/store/repositories/lookups-repository.ts';

/**
 * The third baseline of the lookup phases: the work of an authenticated number lookup and
 * nothing else, on node:http with no framework. What a lookup must cost on this machine and this
 * store, whatever the code around it: a token resolved from memory (the server verifies a token's
 * signature once and then reads it from a map too), a per-account counter, the number
 * normalised, the same SQL on its own read connection, the same aggregate, score, number facts
 * and JSON answer. No hooks, no schema-compiled serializer, no metrics, no logging, no
 * security headers, no revocation check, no cache. Answers 401 to a request without a token; `/healthz` says it is up.
 *
 *   DATABASE_URL=sqlite:bench/.data/events-10000.db PORT=8090 node bench/baselines/minimal-lookup.ts
 */
const url = process.env.DATABASE_URL ?? '';
if (!url.startsWith('sqlite:')) throw new Error('DATABASE_URL must name a SQLite store (sqlite:<path>)');
const db = new Database(url.slice('sqlite:'.length), { fileMustExist: true });
db.pragma('query_only = ON');
db.pragma('cache_size = -65536');
const byScopes = db.prepare<[string, string, string], LookupRow>(
  `select scope, seen_count, first_seen, last_seen, source_ip_count as distinct_count, sip_methods as first_counts, forms as second_counts, nodes as third_counts
     from number_aggregates where scope in (?, ?) and number_key = ?`,
);

const principals = new Map<string, { accountId: string; exp: number }>();
const spent = new Map<string, number>();
const PREFIX = '/api/phone-numbers/';

function send(response: import('node:http').ServerResponse, status: number, answer: unknown) {
  const body = JSON.stringify(answer);
  response.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) });
  response.end(body);
}

const server = createServer((request, response) => {
  if (request.url === '/healthz') return send(response, 200, { ready: true });
  const authorization = request.headers.authorization ?? '';
  const token = authorization.startsWith('Bearer ') ? authorization.slice(7) : '';
  let principal = principals.get(token);
  if (!principal && token) {
    const claims = decodeJwt(token);
    principal = { accountId: String(claims.account_id), exp: Number(claims.exp) };
    principals.set(token, principal);
  }
  if (!principal || principal.exp * 1000 < Date.now()) return send(response, 401, { code: 'invalid_token' });
  spent.set(principal.accountId, (spent.get(principal.accountId) ?? 0) + 1);
  const path = request.url ?? '';
  const number = path.startsWith(PREFIX) ? normalisePhoneNumber(decodeURIComponent(path.slice(PREFIX.length))) : null;
  if (!number) return send(response, 400, { code: 'invalid_phone_number' });
  const rows = byScopes.all(SHARED_SCOPE, principal.accountId, number.key);
  if (rows.length === 0) return send(response, 404, { phone_number: number.written, found: false, message: 'No probes to this number have been seen.' });
  // The benchmark's account holds no events of its own: one row, as in the server.
  const seen = numberAggregateOf(rows, Number(rows[0]!.distinct_count));
  const facts = phoneNumberFacts(number.key);
  send(response, 200, {
    phone_number: number.written,
    found: true,
    seen_count: seen.seenCount,
    first_seen: seen.firstSeen,
    last_seen: seen.lastSeen,
    ...scoreOfNumber(seen, new Date(), DEFAULT_SCORING),
    source_ip_count: seen.sourceIpCount,
    sip_methods: seen.sipMethods,
    matched_forms: seen.forms,
    ...(facts ? { e164: facts.e164, country: facts.country, number_type: facts.number_type } : {}),
    message: `Attackers have tried to call this number ${seen.seenCount} time${seen.seenCount === 1 ? '' : 's'}.`,
  });
});
listenAsBaseline(server);

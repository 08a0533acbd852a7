import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import type { PollOutcome } from '../domain/federation/peer-poller.ts';
import type { PeerView } from '../domain/federation/peer-records.ts';
import type { PeerProbe } from '../domain/federation/peers.ts';
import { POLL_SECONDS_DEFAULT, POLL_SECONDS_MAX, POLL_SECONDS_MIN } from '../domain/federation/peer-settings.ts';
import type { Run } from './command-group.ts';
import { terminalText } from './terminal-text.ts';

/** A peer as JSON for `--json`: its settings and status, never its credential. */
export function peerJson(p: PeerView) {
  const s = p.status;
  return {
    peer_id: p.id,
    name: p.name,
    api_root: p.apiRoot,
    collections: p.collections,
    auth: p.auth,
    username: p.username,
    has_credential: p.hasCredential,
    trust: p.trust,
    poll_seconds: p.pollSeconds,
    republish: p.republish,
    enabled: p.enabled,
    created_at: p.createdAt,
    status: {
      last_success_at: s.lastSuccessAt,
      last_error: s.lastError,
      last_error_at: s.lastErrorAt,
      next_poll_at: s.nextPollAt,
      failures: s.failures,
      polling: s.polling,
      objects_read: s.objectsRead,
      objects_accepted: s.objectsAccepted,
      objects_skipped: s.objectsSkipped,
      objects_refused: s.objectsRefused,
    },
  };
}

/** One line per peer: every value the peer or the operator chose is escaped. */
function peerLine(p: PeerView): string {
  const s = p.status;
  return terminalText`${p.name}  ${p.enabled ? 'enabled ' : 'disabled'}  trust ${p.trust}  every ${p.pollSeconds}s  ${p.apiRoot}  read ${s.objectsRead}, accepted ${s.objectsAccepted}, skipped ${s.objectsSkipped}, refused ${s.objectsRefused}  last success ${s.lastSuccessAt ?? 'never'}${s.lastError ? `  last error (${s.lastErrorAt}): ${s.lastError}` : ''}`;
}

function peerDetail(p: PeerView): string {
  const s = p.status;
  return [
    terminalText`peer_id:      ${p.id}`,
    terminalText`name:         ${p.name}`,
    terminalText`api_root:     ${p.apiRoot}`,
    terminalText`collections:  ${p.collections.join(', ')}`,
    terminalText`auth:         ${p.auth}${p.username ? ` (user ${p.username})` : ''}${p.hasCredential ? ', credential sealed' : ''}`,
    terminalText`trust:        ${p.trust}`,
    terminalText`poll:         every ${p.pollSeconds} s${p.enabled ? '' : ' (disabled)'}; next ${s.nextPollAt ?? 'now'}${s.polling ? '; polling now' : ''}`,
    terminalText`republish:    ${p.republish ? 'allowed (TLP permitting)' : 'no'}`,
    terminalText`objects:      read ${s.objectsRead}, accepted ${s.objectsAccepted}, skipped ${s.objectsSkipped}, refused ${s.objectsRefused}`,
    terminalText`last success: ${s.lastSuccessAt ?? 'never'}`,
    terminalText`last error:   ${s.lastError ? `${s.lastErrorAt}: ${s.lastError}` : 'none'}${s.failures > 0 ? ` (${s.failures} failed in a row)` : ''}`,
  ].join('\n');
}

function probeText(found: PeerProbe): string {
  return [terminalText`found: ${found.title} at ${found.apiRoot}`, ...found.collections.map((c) => terminalText`  collection ${c.id}${c.alias ? ` (${c.alias})` : ''}  ${c.title}  ${c.canRead ? 'can_read' : 'cannot read'}`)].join('\n');
}

function outcomeText(o: PollOutcome): string {
  const c = o.counts;
  return terminalText`${o.ok ? 'polled' : 'poll failed'}: ${o.pages} page${o.pages === 1 ? '' : 's'}; read ${c.read}, accepted ${c.accepted}, skipped ${c.skipped}, refused ${c.refused}${o.error ? `\n${o.ok ? 'note' : 'why'}: ${o.error}` : ''}`;
}

/** A secret from a file or a variable, never from the command line (where `ps` would show it). */
function credentialOf(opts: { credentialFile?: string; credentialEnv?: string }): string | undefined {
  if (opts.credentialFile && opts.credentialEnv) throw new Error('give --credential-file or --credential-env, not both');
  if (opts.credentialFile) return readFileSync(opts.credentialFile, 'utf8').trim();
  if (opts.credentialEnv) {
    const value = process.env[opts.credentialEnv];
    if (value === undefined || value === '') throw new Error(`the variable ${opts.credentialEnv} is not set`);
    return value;
  }
  return undefined;
}

/**
 * `tollwatch peers add|list|show|set|remove|enable|disable|poll-now`: the other TAXII 2.1 servers
 * this one reads (docs/federation.md).
 */
export function peersCommands(program: Command, run: Run): void {
  const peers = program.command('peers').description("manage peers: other TAXII 2.1 servers whose indicators this one reads");
  peers
    .command('add')
    .description('add a peer, once it answers as a TAXII 2.1 server; shows what it found')
    .requiredOption('--name <name>', 'a short name: letters, digits, ".", "_", "-"')
    .requiredOption('--api-root <url>', "the peer's TAXII 2.1 API root (or discovery) URL, e.g. https://peer.example/taxii2/tollwatch/")
    .option('--collections <ids>', 'comma-separated collection ids (or aliases) to read; every readable one by default')
    .option('--auth <kind>', 'none, basic or bearer', 'none')
    .option('--username <name>', 'the Basic username (a Tollwatch peer: the client id)')
    .option('--credential-file <path>', 'a file holding the Basic password or the bearer token (a Tollwatch peer: the client secret)')
    .option('--credential-env <variable>', 'or the environment variable holding it')
    .option('--trust <weight>', 'how far its indicators count, from 0 to 1', '0.5')
    .option('--poll-seconds <n>', `seconds between polls, ${POLL_SECONDS_MIN}–${POLL_SECONDS_MAX}`, String(POLL_SECONDS_DEFAULT))
    .option('--republish', 'allow what it says to be published again (TLP permitting)')
    .option('--disabled', 'add it without polling it yet')
    .action(
      run(async (s, opts: { name: string; apiRoot: string; collections?: string; auth: string; username?: string; credentialFile?: string; credentialEnv?: string; trust: string; pollSeconds: string; republish?: boolean; disabled?: boolean }) => {
        const { peer, found } = await s.peers.add(
          {
            name: opts.name,
            apiRoot: opts.apiRoot,
            collections: opts.collections,
            auth: opts.auth,
            username: opts.username,
            credential: credentialOf(opts),
            trust: opts.trust,
            pollSeconds: opts.pollSeconds,
            republish: opts.republish === true,
            enabled: opts.disabled !== true,
          },
          'operator',
        );
        return {
          json: { peer: peerJson(peer), found: { api_root: found.apiRoot, title: found.title, collections: found.collections.map((c) => ({ id: c.id, title: c.title, ...(c.alias ? { alias: c.alias } : {}), can_read: c.canRead })) } },
          text: `${probeText(found)}\nadded:\n${peerDetail(peer)}`,
        };
      }),
    );
  peers
    .command('list')
    .description('list the peers and their status')
    .action(
      run(async (s) => {
        const all = await s.peers.list();
        return { json: { peers: all.map(peerJson) }, text: all.length === 0 ? 'no peers' : all.map(peerLine).join('\n') };
      }),
    );
  peers
    .command('show <peer>')
    .description('show a peer (by name or id) and its status')
    .action(
      run(async (s, id: string) => {
        const peer = await s.peers.show(id);
        return { json: { peer: peerJson(peer) }, text: peerDetail(peer) };
      }),
    );
  peers
    .command('remove <peer>')
    .description('remove a peer: what it said is marked revoked on every server, then no longer read')
    .action(
      run(async (s, id: string) => {
        const { peer, revoked } = await s.peers.remove(id, 'operator');
        return { json: { peer_id: peer.id, name: peer.name, removed: true, indicators_revoked: revoked }, text: terminalText`removed peer ${peer.name}; ${revoked} of its indicators marked revoked` };
      }),
    );
  peers
    .command('set <peer>')
    .description("change a peer's trust, poll interval or republish setting")
    .option('--trust <weight>', 'from 0 to 1')
    .option('--poll-seconds <n>', `${POLL_SECONDS_MIN}–${POLL_SECONDS_MAX}`)
    .option('--republish', 'allow what it says to be published again (TLP permitting)')
    .option('--no-republish', 'never publish again what it says')
    .action(
      run(async (s, id: string, opts: { trust?: string; pollSeconds?: string; republish?: boolean }) => {
        const peer = await s.peers.change(id, { trust: opts.trust, pollSeconds: opts.pollSeconds, republish: opts.republish }, 'operator');
        return { json: { peer: peerJson(peer) }, text: peerDetail(peer) };
      }),
    );
  for (const [verb, enabled] of [['enable', true], ['disable', false]] as const) {
    peers
      .command(`${verb} <peer>`)
      .description(enabled ? 'poll a peer again (at once)' : 'stop polling a peer; what it said is kept')
      .action(
        run(async (s, id: string) => {
          const peer = await s.peers.setEnabled(id, enabled, 'operator');
          return { json: { peer: peerJson(peer) }, text: peerLine(peer) };
        }),
      );
  }
  peers
    .command('poll-now <peer>')
    .description('poll a peer now, from this command, and show what was read')
    .action(
      run(async (s, id: string) => {
        const { outcome, peer } = await s.peers.pollNow(id);
        return {
          json: { outcome: { ok: outcome.ok, pages: outcome.pages, objects_read: outcome.counts.read, objects_accepted: outcome.counts.accepted, objects_skipped: outcome.counts.skipped, objects_refused: outcome.counts.refused, ...(outcome.error ? { error: outcome.error } : {}) }, peer: peerJson(peer) },
          text: `${outcomeText(outcome)}\n${peerDetail(peer)}`,
          ...(outcome.ok ? {} : { exitCode: 1 }),
        };
      }),
    );
}

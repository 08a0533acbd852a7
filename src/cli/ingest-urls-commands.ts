import type { Command } from 'commander';
import type { IngestUrl } from '../domain/events/ingest-urls.ts';
import type { Run } from './command-group.ts';
import { terminalText } from './terminal-text.ts';

/** `tollwatch ingest-urls create|list|revoke`: node ingest URLs (docs/api.md §11). */
export function ingestUrlsCommands(program: Command, run: Run): void {
  const ingestUrls = program.command('ingest-urls').description('manage node ingest URLs (a secret URL a SentryPeer node posts events to)');
  ingestUrls
    .command('create')
    .description('create an ingest URL for an account whose plan may submit; the URL is shown once')
    .requiredOption('--account <account_id>', 'the account its events go to')
    .requiredOption('--name <label>', 'what it is for, e.g. the node it is given to')
    .action(
      run(async (s, opts: { account: string; name: string }) => {
        const u = await s.ingestUrls.create({ accountId: opts.account, name: opts.name });
        return {
          json: { ingest_url: u.ingest_url, id: u.id, account_id: u.account_id, name: u.name },
          text: terminalText`ingest_url: ${u.ingest_url}\nid:         ${u.id}\nThe URL holds its secret and is shown only now; give it to the node (sentrypeer -w <url>) and store it safely.`,
        };
      }),
    );
  ingestUrls
    .command('list')
    .description("list an account's ingest URLs with their last use (never their secrets)")
    .requiredOption('--account <account_id>', 'owning account')
    .action(
      run(async (s, opts: { account: string }) => {
        const all = await s.ingestUrls.list(opts.account);
        return { json: { ingest_urls: all }, text: all.map(describe).join('\n') };
      }),
    );
  ingestUrls
    .command('revoke <id>')
    .description('revoke an ingest URL; the next request with it is refused')
    .action(
      run(async (s, id: string) => {
        const u = await s.ingestUrls.revoke(id);
        return { json: u, text: terminalText`revoked ingest URL ${u.id} (${u.name}) at ${u.revoked_at ?? ''}` };
      }),
    );
}

/** One line per URL: id, state, last use, name (names come from operators, but are escaped all the same). */
function describe(u: IngestUrl): string {
  const state = u.revoked_at ? `revoked ${u.revoked_at}` : 'active';
  return terminalText`${u.id}  ${state.padEnd(32)}  last used: ${u.last_used_at ?? 'never'}  ${u.name}`;
}

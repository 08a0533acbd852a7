import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import type { Command } from 'commander';
import type { HoneypotEvent, Tollwatch } from '../../sdk/src/index.ts';
import { ApiCommandError, describeApiFailure } from './api-client.ts';
import type { CommandOutput, Run, RunRemote } from './command-group.ts';
import { terminalText } from './terminal-text.ts';

/** Events handed to the SDK at a time: one batch request, and a bounded memory however long the file. */
const CHUNK = 1000;

/** An event the server did not store, by its line in the input. */
interface Refusal {
  line: number;
  event_uuid: string | null;
  status: 'conflict' | 'invalid';
  errors?: Array<{ field: string; message: string }>;
}

/**
 * `tollwatch submit <file.ndjson|->`: one event per line, from a file or standard input, in
 * batches through the SDK (docs/api.md §5). Exit 0 when every event is stored (created or
 * already there), 1 when some were refused (invalid, or a uuid taken by another event), 2 on error.
 */
export function submitCommand(program: Command, _run: Run, runRemote: RunRemote): void {
  program
    .command('submit <file>')
    .description('submit events, one JSON object per line, from a file or - for standard input; exit 0 all stored, 1 some refused, 2 error')
    .action(
      runRemote(async (c, file: string) => {
        const input = file === '-' ? c.stdin : createReadStream(file);
        const totals = await submitLines(c.client(), input);
        const { created, replayed, conflict, invalid, refused } = totals;
        const summary = terminalText`${created + replayed + conflict + invalid} events from ${file === '-' ? 'standard input' : file}: ${created} created, ${replayed} already stored, ${conflict} conflicting, ${invalid} invalid`;
        const lines = refused.map((r) => terminalText`  line ${r.line}: ${r.status}${r.event_uuid ? ` ${r.event_uuid}` : ''}${(r.errors ?? []).map((e) => `; ${e.field} ${e.message}`).join('')}`);
        return { json: totals, text: [summary, ...lines].join('\n'), exitCode: refused.length > 0 ? 1 : 0 } satisfies CommandOutput;
      }),
    );
}

/** Reads NDJSON and submits it chunk by chunk; a line that is not JSON is refused here, by its number. */
async function submitLines(api: Tollwatch, input: NodeJS.ReadableStream) {
  const totals = { created: 0, replayed: 0, conflict: 0, invalid: 0, refused: [] as Refusal[] };
  let chunk: Array<{ line: number; event: HoneypotEvent }> = [];
  const flush = async () => {
    if (chunk.length === 0) return;
    const sent = chunk;
    chunk = [];
    let result;
    try {
      result = await api.submitEvents(sent.map((s) => s.event));
    } catch (err) {
      const done = totals.created + totals.replayed + totals.conflict + totals.invalid;
      if (done === 0) throw err;
      // Resending is safe: events already stored answer as replays (docs/api.md §5).
      throw new ApiCommandError(`${describeApiFailure(err)}, after ${done} events were answered; submitting the same input again is safe`);
    }
    totals.created += result.created;
    totals.replayed += result.replayed;
    totals.conflict += result.conflict;
    totals.invalid += result.invalid;
    for (const r of result.results) {
      if (r.status !== 'conflict' && r.status !== 'invalid') continue;
      totals.refused.push({ line: sent[r.index]!.line, event_uuid: r.event_uuid, status: r.status, ...(r.errors ? { errors: r.errors } : {}) });
    }
  };

  let line = 0;
  for await (const text of createInterface({ input, crlfDelay: Infinity })) {
    line += 1;
    if (text.trim() === '') continue;
    let event: HoneypotEvent;
    try {
      event = JSON.parse(text) as HoneypotEvent;
    } catch {
      totals.invalid += 1;
      totals.refused.push({ line, event_uuid: null, status: 'invalid', errors: [{ field: 'line', message: 'is not JSON' }] });
      continue;
    }
    chunk.push({ line, event });
    if (chunk.length >= CHUNK) await flush();
  }
  await flush();
  return totals;
}

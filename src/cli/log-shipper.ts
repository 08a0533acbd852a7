import { setTimeout as sleep } from 'node:timers/promises';
import { OAuthError, TollwatchError, type HoneypotEvent, type Tollwatch } from '../../sdk/src/index.ts';
import { ApiCommandError } from './api-client.ts';
import { FINGERPRINT_BYTES, findRotated, identityOf, LogFile, MAX_LINE_BYTES, sameFile, type LogLine } from './log-file.ts';
import { readShipState, writeShipState, type ShipState } from './ship-state.ts';

/** What `tollwatch ship` is told to do. */
export interface ShipOptions {
  /** The SentryPeer JSON log, one event per line. */
  logPath: string;
  /** Where the acknowledged offset is kept. */
  statePath: string;
  /** Keep shipping as the log grows and is rotated, until `signal` stops it. */
  follow: boolean;
  /** Lines per batch request, 1 to 1,000 (docs/api.md §5). */
  batchSize: number;
  /** How often a followed log is looked at for new lines, rotation and truncation. */
  pollMs: number;
  /** Stops shipping between batches (and cuts a wait short); what was acknowledged is kept. */
  signal: AbortSignal;
}

/** What became of the events shipped, as the server answered (docs/api.md §5), and the lines refused before sending. */
export interface ShipTotals {
  created: number;
  replayed: number;
  conflict: number;
  invalid: number;
}

/** Where the shipper is, for the progress line. */
export interface ShipStatus {
  file: string;
  /** The last line acknowledged. */
  line: number;
  totals: ShipTotals;
  /** What it is doing: shipping, following (waiting for lines), or waiting out a failure. */
  activity: string;
}

/** Who hears about the shipper's work while it runs. */
export interface ShipReporter {
  /** A line that will not be stored: not JSON, refused by the server, or never finished. */
  refused(file: string, line: number, reason: string): void;
  /** A change worth a line of its own: rotation, truncation, a failure and the wait before trying again. */
  notice(message: string): void;
  progress(status: ShipStatus): void;
}

/** The file being shipped and how far it is acknowledged. */
interface Position {
  file: LogFile;
  offset: number;
  line: number;
  /** Hash of the first min(offset, FINGERPRINT_BYTES) bytes, as last saved. */
  fingerprint: string | null;
  fingerprintBytes: number;
}

/**
 * The longest wait between tries of one batch, in milliseconds. The SDK has already made its
 * five tries over about half a minute; after that, one try a minute is enough to notice the
 * server back, and is no load on it while it is down.
 */
const MAX_BACKOFF_MS = 60_000;

/**
 * Ships a SentryPeer JSON log through the batch route, a batch at a time, recording after each
 * acknowledged batch the offset up to which every line was answered. Nothing is skipped: a
 * batch that fails is sent again until the server answers it (an event stored twice is a
 * replay, docs/api.md §5), and a line is passed over only once the server has answered for it
 * or it cannot be an event at all (not JSON, too long), which is reported.
 */
export class LogShipper {
  private readonly api: Tollwatch;
  private readonly options: ShipOptions;
  private readonly report: ShipReporter;
  private readonly totals: ShipTotals = { created: 0, replayed: 0, conflict: 0, invalid: 0 };
  private current: Position | undefined;
  /** Set when a followed log was seen renamed away: its file gets one more poll before it is left. */
  private rotationSeen = false;
  /** A rotated file was finished on start-up, so an absent log is no error. */
  private finishedRotated = false;

  constructor(api: Tollwatch, options: ShipOptions, report: ShipReporter) {
    this.api = api;
    this.options = options;
    this.report = report;
  }

  /** Ships until the log's end (or, following, until stopped); resolves with the totals. */
  async run(): Promise<ShipTotals> {
    try {
      await this.resume();
      while (!this.options.signal.aborted) {
        if (!this.current && !(await this.openLog())) {
          if (!this.options.follow) {
            if (this.finishedRotated) break;
            throw new ApiCommandError(`cannot read ${this.options.logPath}: no such file`);
          }
          await this.idle('waiting for the log to appear');
          continue;
        }
        if (await this.shipBatch()) continue;
        if (!this.options.follow) {
          await this.noteUnfinishedLine();
          break;
        }
        await this.followChanges();
      }
    } catch (err) {
      if (!(this.options.signal.aborted && (err as Error).name === 'AbortError')) throw err;
    } finally {
      await this.current?.file.close();
    }
    return this.totals;
  }

  /**
   * Picks up where the state file says: the same file at its offset; or, when the log was
   * rotated while nothing shipped it, the rest of the old file first (found beside the log by
   * its identity), then the new log from its start.
   */
  private async resume(): Promise<void> {
    const { logPath, statePath } = this.options;
    const state = await readShipState(statePath);
    const file = await LogFile.open(logPath);
    if (!state) {
      if (file) this.current = fresh(file);
      return;
    }
    if (file && sameFile(file.identity, state) && (await recognises(file, state))) {
      this.current = { file, offset: state.offset, line: state.line, fingerprint: state.fingerprint, fingerprintBytes: state.fingerprint_bytes };
      return;
    }
    try {
      await this.finishRotated(state);
    } catch (err) {
      await file?.close();
      throw err;
    }
    if (this.options.signal.aborted) {
      // Stopped halfway through the old file: the state still names it, for the next run.
      await file?.close();
      return;
    }
    if (!this.finishedRotated && state.offset > 0) {
      const why = file && sameFile(file.identity, state) ? `${logPath} was truncated or rewritten` : `the file shipped before (${state.log}) is gone`;
      this.report.notice(`${why}; shipping ${logPath} from its start`);
    }
    if (file) {
      this.current = fresh(file);
      await this.save();
    }
  }

  /** Ships the rest of the file a state names when it is still beside the log under another name. */
  private async finishRotated(state: ShipState): Promise<void> {
    const { logPath, signal } = this.options;
    const oldPath = await findRotated(logPath, state);
    const old = oldPath && oldPath !== logPath ? await LogFile.open(oldPath) : undefined;
    if (!old) return;
    if (!(await recognises(old, state))) {
      await old.close();
      return;
    }
    this.report.notice(`${logPath} was rotated while not shipping; finishing ${oldPath} first`);
    this.current = { file: old, offset: state.offset, line: state.line, fingerprint: state.fingerprint, fingerprintBytes: state.fingerprint_bytes };
    while (!signal.aborted && (await this.shipBatch()));
    if (signal.aborted) return;
    await this.leaveRotated();
    await old.close();
    this.current = undefined;
    this.finishedRotated = true;
  }

  private async openLog(): Promise<boolean> {
    const file = await LogFile.open(this.options.logPath);
    if (!file) return false;
    this.current = fresh(file);
    await this.save();
    return true;
  }

  /** Ships the next batch of complete lines; false when there are none yet. */
  private async shipBatch(): Promise<boolean> {
    const at = this.current!;
    const lines = await at.file.readLines(at.offset, at.line + 1, this.options.batchSize);
    if (lines.length === 0) return false;
    const refusals: Array<{ line: number; reason: string }> = [];
    const sent: LogLine[] = [];
    const events: unknown[] = [];
    for (const line of lines) {
      if (line.text === undefined) {
        refusals.push({ line: line.number, reason: `longer than ${MAX_LINE_BYTES} bytes, so no event; skipped` });
        continue;
      }
      if (line.text.trim() === '') continue;
      try {
        events.push(JSON.parse(line.text));
        sent.push(line);
      } catch {
        refusals.push({ line: line.number, reason: 'not JSON; skipped' });
      }
    }
    // Lines that cannot be events are invalid as the server would have answered them.
    const unreadable = refusals.length;
    if (events.length > 0) {
      const result = await this.submit(events);
      this.totals.created += result.created;
      this.totals.replayed += result.replayed;
      this.totals.conflict += result.conflict;
      this.totals.invalid += result.invalid;
      for (const r of result.results) {
        if (r.status === 'invalid') {
          const fields = (r.errors ?? []).map((e) => `; ${e.field} ${e.message}`).join('');
          refusals.push({ line: sent[r.index]!.number, reason: `invalid${r.event_uuid ? ` ${r.event_uuid}` : ''}${fields}; skipped` });
        } else if (r.status === 'conflict') {
          refusals.push({ line: sent[r.index]!.number, reason: `conflict: ${r.event_uuid} is already stored with other content; skipped` });
        }
      }
    }
    this.totals.invalid += unreadable;
    refusals.sort((a, b) => a.line - b.line);
    for (const r of refusals) this.report.refused(at.file.path, r.line, r.reason);
    const last = lines.at(-1)!;
    at.offset = last.end;
    at.line = last.number;
    await this.save();
    this.progress('shipping');
    return true;
  }

  /**
   * Sends one batch until the server answers it. The SDK retries on its own first; failures
   * that outlast its tries (an outage, an allowance spent for longer than it waits) are waited
   * out here, with a backoff that grows to a minute and never undercuts `Retry-After`. A
   * failure no wait can cure (credentials refused, a plan that may not submit) ends the run.
   */
  private async submit(events: unknown[]) {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.api.submitEvents(events as HoneypotEvent[]);
      } catch (err) {
        if (!isPassing(err)) throw err;
        const step = Math.min(MAX_BACKOFF_MS, 1000 * 2 ** (attempt - 1));
        // Half the step, plus up to half again: shippers cut off together do not return together.
        const waitMs = Math.max(retryAfterOf(err) * 1000, step / 2 + Math.random() * (step / 2));
        const seconds = Math.ceil(waitMs / 1000);
        this.report.notice(`${describe(err)}; sending the same lines again in ${seconds} s`);
        this.progress(`waiting ${seconds} s for the server`);
        await sleep(waitMs, undefined, { signal: this.options.signal });
      }
    }
  }

  /** At a followed log's end: notices rotation and truncation, else waits for the next poll. */
  private async followChanges(): Promise<void> {
    const at = this.current!;
    const now = await identityOf(this.options.logPath);
    if (now && !sameFile(now, at.file.identity)) {
      // Renamed away. A SentryPeer node opens its log for each event, so the next event goes to
      // the new file; one more poll lets a write that raced the rename land in the old one.
      if (!this.rotationSeen) {
        this.rotationSeen = true;
        await this.idle('following');
        return;
      }
      this.rotationSeen = false;
      await this.leaveRotated();
      await at.file.close();
      this.current = undefined;
      this.report.notice(`${this.options.logPath} was rotated; shipping the new file from its start`);
      await this.openLog();
      return;
    }
    if (now && !(await recognises(at.file, { offset: at.offset, fingerprint: at.fingerprint, fingerprint_bytes: at.fingerprintBytes }))) {
      this.report.notice(`${this.options.logPath} was truncated or rewritten; shipping it from its start`);
      this.current = fresh(at.file);
      await this.save();
      return;
    }
    await this.idle('following');
  }

  /** A rotated file is left for good: a last line it never finished is reported, since it never will be. */
  private async leaveRotated(): Promise<void> {
    const at = this.current!;
    if ((await at.file.size()) > at.offset) {
      this.totals.invalid += 1;
      this.report.refused(at.file.path, at.line + 1, 'never finished (no newline) before the log was rotated; skipped');
    }
  }

  private async noteUnfinishedLine(): Promise<void> {
    const at = this.current!;
    if ((await at.file.size()) > at.offset) {
      this.report.notice(`${at.file.path} line ${at.line + 1} is not finished (no newline yet); the next run ships it`);
    }
  }

  /** Records the acknowledged position (see ship-state.ts). */
  private async save(): Promise<void> {
    const at = this.current!;
    const bytes = Math.min(FINGERPRINT_BYTES, at.offset);
    if (bytes !== at.fingerprintBytes || at.fingerprint === null) {
      const fingerprint = bytes === 0 ? undefined : await at.file.fingerprint(bytes);
      at.fingerprint = fingerprint ?? null;
      at.fingerprintBytes = fingerprint ? bytes : 0;
    }
    const state: ShipState = {
      version: 1,
      log: at.file.path,
      ...at.file.identity,
      offset: at.offset,
      line: at.line,
      fingerprint: at.fingerprint,
      fingerprint_bytes: at.fingerprintBytes,
      updated_at: new Date().toISOString(),
    };
    await writeShipState(this.options.statePath, state);
  }

  private async idle(activity: string): Promise<void> {
    this.progress(activity);
    await sleep(this.options.pollMs, undefined, { signal: this.options.signal });
  }

  private progress(activity: string): void {
    this.report.progress({ file: this.current?.file.path ?? this.options.logPath, line: this.current?.line ?? 0, totals: { ...this.totals }, activity });
  }
}

function fresh(file: LogFile): Position {
  return { file, offset: 0, line: 0, fingerprint: null, fingerprintBytes: 0 };
}

/** Whether a file is the one a state describes: at least as long, and starting with the same bytes. */
async function recognises(file: LogFile, state: Pick<ShipState, 'offset' | 'fingerprint' | 'fingerprint_bytes'>): Promise<boolean> {
  if ((await file.size()) < state.offset) return false;
  if (state.fingerprint === null || state.fingerprint_bytes === 0) return true;
  return (await file.fingerprint(state.fingerprint_bytes)) === state.fingerprint;
}

/**
 * Failures that pass: the network, the store briefly down (503), the allowance spent (429), a
 * proxy's 502 or 504, a server fault (500). Anything else (credentials refused, a plan that may
 * not submit, a wrong URL) would fail the same way every time.
 */
function isPassing(err: unknown): boolean {
  if (err instanceof TollwatchError || err instanceof OAuthError) return err.status === 429 || err.status === 408 || err.status >= 500;
  // fetch throws a TypeError for a refused or reset connection, and a TimeoutError for a slow try.
  return err instanceof TypeError || (err instanceof Error && err.name === 'TimeoutError');
}

function retryAfterOf(err: unknown): number {
  return err instanceof TollwatchError || err instanceof OAuthError ? (err.retryAfter ?? 0) : 0;
}

function describe(err: unknown): string {
  if (err instanceof TollwatchError) return `the server answered ${err.status} (${err.error})`;
  if (err instanceof OAuthError) return `the token endpoint answered ${err.status} (${err.error})`;
  const cause = err instanceof Error && err.cause instanceof Error ? `: ${err.cause.message}` : '';
  return `cannot reach the server (${err instanceof Error ? err.message : String(err)}${cause})`;
}

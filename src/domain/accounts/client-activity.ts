/**
 * When and from where each API client was last used (docs/dashboard.md, "Last used"): its last
 * token grant and its last API call. Noted in memory on the request's path, which costs a map
 * write and no store round trip, and written every `flushMs` (or at `flush()`, and on close) in
 * one statement for every client whose use changed since. Each instance flushes its own; the
 * store keeps the later of what it holds and what is written, so the latest use wins whichever
 * instance saw it. A process that dies loses at most `flushMs` of "last used", nothing else.
 */

/** One use: when (ISO 8601) and from which address (null where the caller did not say). */
export interface ClientUse {
  at: string;
  address: string | null;
}

/** A client's latest uses since the last flush; a kind absent was not seen. */
export interface ClientUses {
  clientId: string;
  token?: ClientUse;
  call?: ClientUse;
}

/** Where the uses are written. */
export interface ClientActivityRepository {
  /**
   * Writes every client's uses in one statement, each only over an earlier one (another
   * instance may have written a later one meanwhile); a client no longer stored is skipped.
   */
  recordUses(uses: ClientUses[]): Promise<void>;
}

/** How long uses gather before they are written (the bound on how late the dashboard shows them). */
export const CLIENT_USE_FLUSH_MS = 30_000;

/** A use as noted: a number, so that a request allocates nothing when its client was seen before. */
interface Noted {
  at: number;
  address: string | null;
}

interface Pending {
  token?: Noted;
  call?: Noted;
}

export class ClientActivity {
  private readonly repo: ClientActivityRepository;
  private readonly flushMs: number;
  private readonly onError: (err: unknown) => void;
  private pending = new Map<string, Pending>();
  private timer: NodeJS.Timeout | undefined;
  private writing: Promise<void> = Promise.resolve();

  constructor(repo: ClientActivityRepository, flushMs: number, onError: (err: unknown) => void) {
    this.repo = repo;
    this.flushMs = flushMs;
    this.onError = onError;
  }

  /** A token was issued to the client, asked for from `address`. */
  tokenIssued(clientId: string, address: string | null, at = Date.now()): void {
    const entry = this.entry(clientId);
    entry.token = later(entry.token, at, address);
  }

  /** The client made an authenticated API call from `address`. */
  called(clientId: string, address: string, at = Date.now()): void {
    const entry = this.entry(clientId);
    entry.call = later(entry.call, at, address);
  }

  /** Writes what has gathered, in one statement; resolves once written (or the failure told). */
  flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.pending.size === 0) return this.writing;
    const taken = this.pending;
    this.pending = new Map();
    const uses = [...taken].map(([clientId, { token, call }]) => ({ clientId, ...(token ? { token: useOf(token) } : {}), ...(call ? { call: useOf(call) } : {}) }));
    this.writing = this.writing.then(() =>
      this.repo.recordUses(uses).catch((err: unknown) => {
        // Kept for the next flush rather than lost: a store away for a while costs nothing but lateness.
        for (const [clientId, { token, call }] of taken) {
          const entry = this.entry(clientId);
          if (token) entry.token = later(entry.token, token.at, token.address);
          if (call) entry.call = later(entry.call, call.at, call.address);
        }
        this.onError(err);
      }),
    );
    return this.writing;
  }

  /** Writes what is left; for the process's close. */
  close(): Promise<void> {
    return this.flush();
  }

  private entry(clientId: string): Pending {
    let entry = this.pending.get(clientId);
    if (!entry) {
      entry = {};
      this.pending.set(clientId, entry);
      this.timer ??= setTimeout(() => void this.flush(), this.flushMs).unref();
    }
    return entry;
  }
}

/** The later of a noted use and a new one (requests finish out of order). */
function later(noted: Noted | undefined, at: number, address: string | null): Noted {
  if (!noted) return { at, address };
  if (at >= noted.at) {
    noted.at = at;
    noted.address = address;
  }
  return noted;
}

function useOf(noted: Noted): ClientUse {
  return { at: new Date(noted.at).toISOString(), address: noted.address };
}

import type { Account, AccountsRepository, Client } from '../domain/accounts/accounts.ts';

/** What the cache holds of one client; a new object whenever it is read again. */
export interface CredentialsEntry {
  found: { client: Client; account: Account } | undefined;
  loadedAt: number;
}

/**
 * Clients and their accounts as the API authenticator needs them on every request.
 *
 * An entry lives at most `ttlMs` (the bound on how late a change made elsewhere bites), is
 * dropped at once when this process changes access, and the whole cache is dropped when
 * the store reports a commit by another process (the operator CLI on the same SQLite file).
 */
export class CredentialsCache {
  private readonly repo: AccountsRepository;
  private readonly ttlMs: number;
  private readonly externalChangeCounter: (() => number) | undefined;
  private readonly entries = new Map<string, CredentialsEntry>();
  /**
   * Reads in flight, by client: the requests that find an entry out of date together (every
   * request in flight when a busy client's entry reaches its bound) wait for one read.
   */
  private readonly loading = new Map<string, Promise<CredentialsEntry>>();
  /** Counts clears: a read that started before one is answered, but neither kept nor joined. */
  private generation = 0;
  private lastCounter: number | undefined;

  constructor(repo: AccountsRepository, ttlMs: number, externalChangeCounter?: () => number) {
    this.repo = repo;
    this.ttlMs = ttlMs;
    this.externalChangeCounter = externalChangeCounter;
  }

  /** The client and its account, or undefined when the client does not exist. */
  async get(clientId: string): Promise<{ client: Client; account: Account } | undefined> {
    return (await this.entry(clientId)).found;
  }

  /**
   * The entry of a client while it is still good, without reading the store: the same object
   * for as long as nothing about the client may have changed. Whoever checked what it holds
   * may rely on that check while `fresh` returns the very entry it checked.
   */
  fresh(clientId: string): CredentialsEntry | undefined {
    this.dropIfChangedElsewhere();
    const cached = this.entries.get(clientId);
    return cached && Date.now() - cached.loadedAt < this.ttlMs ? cached : undefined;
  }

  /** The entry of a client, read from the store when none is good. */
  async entry(clientId: string): Promise<CredentialsEntry> {
    const cached = this.fresh(clientId);
    if (cached) return cached;
    let pending = this.loading.get(clientId);
    if (!pending) {
      const loading = this.load(clientId);
      this.loading.set(clientId, loading);
      const forget = () => {
        if (this.loading.get(clientId) === loading) this.loading.delete(clientId);
      };
      loading.then(forget, forget);
      pending = loading;
    }
    return pending;
  }

  private async load(clientId: string): Promise<CredentialsEntry> {
    const generation = this.generation;
    const now = Date.now();
    const client = await this.repo.findClient(clientId);
    const account = client && (await this.repo.findAccount(client.account_id));
    const found = client && account ? { client, account } : undefined;
    const entry = { found, loadedAt: now };
    if (generation === this.generation) {
      if (this.entries.size >= 10_000) this.entries.clear();
      this.entries.set(clientId, entry);
    }
    return entry;
  }

  /** Forgets everything: after this process changed access, or on a notice from another instance. */
  clear(): void {
    this.generation++;
    this.entries.clear();
    this.loading.clear();
  }

  private dropIfChangedElsewhere(): void {
    if (!this.externalChangeCounter) return;
    const counter = this.externalChangeCounter();
    if (counter !== this.lastCounter) {
      this.clear();
      this.lastCounter = counter;
    }
  }
}

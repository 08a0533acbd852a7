/**
 * Asks a dependency whether it answers, for a scrape: at most one question in flight, and an
 * answer within `timeoutMs` whatever the dependency does. A store that hangs (a pool with no
 * free connection, a server that stopped answering) must not hold the scrape: Prometheus would
 * time it out and lose every other metric with it. A ping that outlives its timeout is not
 * repeated while it is still in flight, so scrapes never pile pings on a struggling store.
 */
export class HealthProbe {
  private readonly ping: () => Promise<void>;
  private readonly timeoutMs: number;
  private inFlight: Promise<void> | undefined;

  constructor(ping: () => Promise<void>, timeoutMs: number) {
    this.ping = ping;
    this.timeoutMs = timeoutMs;
  }

  /** Whether the dependency answered within the timeout. */
  async answers(): Promise<boolean> {
    // Scrapes at the same moment (two Prometheus servers) share one ping, as does a scrape
    // that comes while an earlier one's ping still hangs.
    this.inFlight ??= this.ping().finally(() => {
      this.inFlight = undefined;
    });
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), this.timeoutMs);
    });
    try {
      return await Promise.race([this.inFlight.then(() => true, () => false), timedOut]);
    } finally {
      clearTimeout(timer);
    }
  }
}

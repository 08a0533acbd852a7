import { Tollwatch, type HoneypotEvent, type TollwatchOptions } from '../../sdk/src/index.ts';
import { sampleEvent, type Harness, type TestAccount } from '../support/harness.ts';

/** An SDK client of the harness for an account, counting its token requests. */
export function sdkFor(h: Harness | { url: string }, who: TestAccount, options: Partial<TollwatchOptions> = {}) {
  const counts = { tokenRequests: 0, apiRequests: 0 };
  const inner = options.fetch ?? fetch;
  const client = new Tollwatch({
    baseUrl: h.url,
    clientId: who.clientId,
    clientSecret: who.clientSecret,
    // Tests wait for real only where the wait is what they check.
    retry: { baseDelayMs: 10, maxDelayMs: 50 },
    // A loaded CI machine can take longer than the lookups' default second; the tests of that
    // deadline pass `lookupDeadlineMs: undefined` to get the default back.
    lookupDeadlineMs: 30_000,
    ...options,
    fetch: (url, init) => {
      if (url.endsWith('/oauth/token')) counts.tokenRequests += 1;
      else counts.apiRequests += 1;
      return inner(url, init);
    },
  });
  return { client, counts };
}

/** The harness's sample event, typed as the SDK takes it. */
export function sdkEvent(overrides: Record<string, unknown> = {}): HoneypotEvent {
  return sampleEvent(overrides) as unknown as HoneypotEvent;
}

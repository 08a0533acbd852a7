import { describe, expect, it } from "vitest";
import type { Account } from "../../src/domain/accounts/accounts.ts";
import type { AlertOutbox, NewAlert } from "../../src/domain/alerts/alerts.ts";
import {
  LookupAlerts,
  SUBSCRIPTION_MEMORY_MS,
} from "../../src/domain/alerts/lookup-alerts.ts";

/**
 * How LookupAlerts remembers accounts without a lookup.matched integration, over an outbox
 * that answers with the subscriptions it is given (the SQL outbox is exercised end to end in
 * test/alerts/deliveries.test.ts).
 */
function outboxWith(subscriptions: Set<string>) {
  const written: NewAlert[][] = [];
  const outbox: AlertOutbox = {
    async enqueueSubscribed(alerts) {
      written.push(alerts);
      return subscriptions;
    },
  };
  return { outbox, written };
}

const account = (id: string) => ({ account_id: id }) as Account;
const match = (n: number) => ({
  subject: `number:+4412345${n}`,
  lookup: "phone_number" as const,
  answer: { found: true, message: "seen" },
});
const settings = { flushMs: 60_000, maxBuffered: 1000, dedupWindowMs: 60_000 };

describe("lookup.matched gathering", () => {
  it("builds no alert for an account known to have no such integration, and asks again after SUBSCRIPTION_MEMORY_MS", async () => {
    let now = 1_000_000;
    const { outbox, written } = outboxWith(new Set(["b|lookup.matched"]));
    const alerts = new LookupAlerts(
      outbox,
      settings,
      (err) => {
        throw err;
      },
      () => now,
    );
    alerts.matched(account("a"), match(1));
    alerts.matched(account("b"), match(1));
    await alerts.flush();
    expect(written.at(-1)!.map((a) => a.accountId)).toEqual(["a", "b"]);
    // Known now: a has none, b has one.
    alerts.matched(account("a"), match(2));
    alerts.matched(account("b"), match(2));
    await alerts.flush();
    expect(written.at(-1)!.map((a) => a.accountId)).toEqual(["b"]);
    now += SUBSCRIPTION_MEMORY_MS + 1;
    alerts.matched(account("a"), match(3));
    await alerts.flush();
    expect(written.at(-1)!.map((a) => a.accountId)).toEqual(["a"]);
  });

  it("gathers an account again at once when told its integrations changed", async () => {
    const { outbox, written } = outboxWith(new Set());
    const alerts = new LookupAlerts(outbox, settings, (err) => {
      throw err;
    });
    alerts.matched(account("a"), match(1));
    await alerts.flush();
    alerts.forget("a");
    alerts.matched(account("a"), match(2));
    await alerts.flush();
    expect(written).toHaveLength(2);
  });

  it("does not take an answer read before a change as knowledge", async () => {
    let release!: () => void;
    const written: NewAlert[][] = [];
    const outbox: AlertOutbox = {
      async enqueueSubscribed(batch) {
        written.push(batch);
        if (written.length === 1)
          await new Promise<void>((resolve) => (release = resolve));
        return new Set();
      },
    };
    const alerts = new LookupAlerts(outbox, settings, (err) => {
      throw err;
    });
    alerts.matched(account("a"), match(1));
    const first = alerts.flush();
    await new Promise((resolve) => setTimeout(resolve, 10));
    // The integration is made while the store is being asked: that answer may predate it.
    alerts.forget("a");
    release();
    await first;
    alerts.matched(account("a"), match(2));
    await alerts.flush();
    expect(written).toHaveLength(2);
  });
});

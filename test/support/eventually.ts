/**
 * Waiting for a condition instead of for time (docs/testing.md, "Waiting"). A test that sleeps a
 * fixed time and then asserts a count assumes the machine's speed; one that polls for the count
 * with a generous deadline passes on a busy machine as on a quiet one, and takes only as long as
 * the condition takes. Fixed sleeps are left only where a test proves that something does *not*
 * happen within a documented bound.
 */

/**
 * How long a condition that should hold "soon" may take on a loaded two-core machine before the
 * test says it never came: far above what a quiet machine needs, so only a real fault reaches it.
 */
export const PATIENCE_MS = 20_000;

/** Resolves after `ms`. */
export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Asks `probe` until its answer satisfies `done`, and returns that answer. Past the deadline it
 * throws, naming `what` was awaited and the last answer seen, so a failure says how far it got.
 */
export async function eventually<T>(
  what: string,
  probe: () => T | Promise<T>,
  done: (seen: T) => boolean,
  { timeoutMs = PATIENCE_MS, everyMs = 25 }: { timeoutMs?: number; everyMs?: number } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const seen = await probe();
    if (done(seen)) return seen;
    if (Date.now() >= deadline) throw new Error(`waited ${timeoutMs} ms for ${what}; last saw ${describe(seen)}`);
    await sleep(everyMs);
  }
}

function describe(value: unknown): string {
  if (Array.isArray(value)) return `${value.length} item(s): ${truncate(JSON.stringify(value))}`;
  try {
    return truncate(JSON.stringify(value) ?? String(value));
  } catch {
    return String(value);
  }
}

function truncate(text: string): string {
  return text.length > 500 ? `${text.slice(0, 500)}…` : text;
}

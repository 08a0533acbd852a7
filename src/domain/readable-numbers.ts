/**
 * The one way people are shown a count or a limit, on the dashboard's pages and charts and in
 * mails: digits grouped in threes by commas, whatever the reader's language ("9,000", "100,000",
 * "3,600"), so a number reads the same everywhere (docs/dashboard.md, "Numbers").
 */
const GROUPED = new Intl.NumberFormat('en', { maximumFractionDigits: 0 });

export function countText(n: number): string {
  return GROUPED.format(n);
}

/** A count with its noun, singular for one: "1 event", "9,000 events". */
export function countOf(n: number, noun: string, plural = `${noun}s`): string {
  return `${countText(n)} ${n === 1 ? noun : plural}`;
}

const PER: Record<number, string> = { 1: 'a second', 60: 'a minute', 3600: 'an hour', 86_400: 'a day' };

/** A plan's rate as a sentence says it: "3,600 an hour", "25 lookups a minute" (the plan forms keep the CLI's `3600/hour`). */
export function rateText(window: { limit: number; windowSeconds: number }, noun?: string): string {
  const count = noun ? countOf(window.limit, noun) : countText(window.limit);
  return `${count} ${PER[window.windowSeconds] ?? `in ${countText(window.windowSeconds)} seconds`}`;
}

import { countOf } from './readable-numbers.ts';

const WRITTEN = new Intl.DateTimeFormat('en-GB', { day: 'numeric', month: 'long', year: 'numeric', hour: '2-digit', minute: '2-digit', hourCycle: 'h23', timeZone: 'UTC' });

/**
 * An instant as a person reads it in a mail, where no page says the zone for them:
 * "2 December 2026, 14:05 UTC" (to the minute; a mail names times people act before).
 */
export function readableTime(at: Date | string): string {
  const parts = Object.fromEntries(WRITTEN.formatToParts(typeof at === 'string' ? new Date(at) : at).map((p) => [p.type, p.value]));
  return `${parts.day} ${parts.month} ${parts.year}, ${parts.hour}:${parts.minute} UTC`;
}

/** A span of time as people say it: "45 seconds", "1 minute", "59 minutes", "2 hours", "3 days" (rounded up). */
export function durationText(seconds: number): string {
  const units: Array<[string, number]> = [['day', 86_400], ['hour', 3600], ['minute', 60]];
  for (const [unit, size] of units) {
    if (seconds >= size) {
      const n = Math.ceil(seconds / size - 1e-9);
      return countOf(n, unit);
    }
  }
  const n = Math.max(0, Math.ceil(seconds));
  return `${n} second${n === 1 ? '' : 's'}`;
}

import { countOf } from './number-text.ts';

/** An ISO instant as the pages show it: UTC, to the minute (`2026-11-23 11:04`). */
export function toMinute(iso: string): string {
  return iso.slice(0, 16).replace('T', ' ');
}

/** An ISO instant as the pages show it: UTC, to the second (`2026-11-23 11:04:58`). */
export function toSecond(iso: string): string {
  return iso.slice(0, 19).replace('T', ' ');
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

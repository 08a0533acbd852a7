/** A normalised event instant. */
export interface EventInstant {
  /** `YYYY-MM-DDTHH:MM:SS.fffffffffZ`: UTC, nine fractional digits, so text order is time order. */
  iso: string;
  epochMs: number;
}

// The SentryPeer form (`2022-02-22 11:19:15.848934346`) and RFC 3339, both with 0-9 fraction digits.
const NODE_FORM = /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?$/;
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/;

const DAY_MS = 86_400_000;
const MIN_YEAR = 1970;

/**
 * Parses an `event_timestamp`: the node's `YYYY-MM-DD HH:MM:SS[.fraction]` (UTC) or RFC 3339.
 * Fields are checked by hand, since Date parsing would roll Feb 30 over into March.
 */
export function parseEventTimestamp(input: string, now: Date): EventInstant | { error: string } {
  const node = NODE_FORM.exec(input);
  const rfc = node ? null : RFC3339.exec(input);
  const m = node ?? rfc;
  if (!m) return { error: 'must be YYYY-MM-DD HH:MM:SS with up to 9 fractional digits, or RFC 3339' };
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  const fraction = (m[7] ?? '').padEnd(9, '0');
  // The year is checked after conversion to UTC: `1969-12-31T23:30:00-01:00` is in 1970.
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return { error: 'is not a real date' };
  if (hour > 23 || minute > 59 || second > 59) return { error: 'is not a real time of day' };

  let offsetMinutes = 0;
  if (rfc && !rfc[8]) {
    const offHours = Number(rfc[10]);
    const offMinutes = Number(rfc[11]);
    if (offHours > 23 || offMinutes > 59) return { error: 'has an impossible UTC offset' };
    offsetMinutes = (rfc[9] === '-' ? -1 : 1) * (offHours * 60 + offMinutes);
  }
  // Whole milliseconds from the calendar fields; the sub-millisecond digits ride alongside.
  const wholeMs = Date.UTC(year, month - 1, day, hour, minute, second) - offsetMinutes * 60_000;
  const utc = new Date(wholeMs);
  if (utc.getUTCFullYear() < MIN_YEAR) return { error: `must be in ${MIN_YEAR} or later` };
  if (utc.getUTCFullYear() > 9999) return { error: 'is too far in the future' };
  const epochMs = wholeMs + Number(fraction.slice(0, 3));
  const limitMs = now.getTime() + DAY_MS;
  // Exact to the nanosecond: one past the limit is refused even within its millisecond.
  if (epochMs > limitMs || (epochMs === limitMs && Number(fraction.slice(3)) > 0)) {
    return { error: 'is more than 24 hours in the future' };
  }
  const iso = `${utc.toISOString().slice(0, 19)}.${fraction}Z`;
  return { iso, epochMs };
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

const WRITTEN = new Intl.DateTimeFormat('en-GB', { day: 'numeric', month: 'long', year: 'numeric', hour: '2-digit', minute: '2-digit', hourCycle: 'h23', timeZone: 'UTC' });

/**
 * An instant as a person reads it in a mail, where no page says the zone for them:
 * "2 December 2026, 14:05 UTC" (to the minute; a mail names times people act before).
 */
export function readableTime(at: Date | string): string {
  const parts = Object.fromEntries(WRITTEN.formatToParts(typeof at === 'string' ? new Date(at) : at).map((p) => [p.type, p.value]));
  return `${parts.day} ${parts.month} ${parts.year}, ${parts.hour}:${parts.minute} UTC`;
}

/**
 * One CSV field (RFC 4180), for every CSV we write: the dashboard's event export and the feeds
 * (docs/api.md §14). Their values are attacker-written (user agents, called numbers), and a
 * spreadsheet runs a cell starting with `=`, `@`, `+` or `-` as a formula (CSV injection): such a
 * value gets a leading `'`, except a number written with a sign (`+4681…`, a called number),
 * which no spreadsheet runs. Quoted when it holds a comma, quote or line break.
 */
export function csvField(value: string): string {
  const guarded = /^[=@\t\r]/.test(value) || (/^[+-]/.test(value) && !/^[+-][\d\s().-]*$/.test(value)) ? `'${value}` : value;
  return /[",\r\n]/.test(guarded) ? `"${guarded.replace(/"/g, '""')}"` : guarded;
}

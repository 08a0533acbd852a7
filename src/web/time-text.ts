/** An ISO instant as the pages show it: UTC, to the minute (`2026-11-23 11:04`). */
export function toMinute(iso: string): string {
  return iso.slice(0, 16).replace('T', ' ');
}

/** An ISO instant as the pages show it: UTC, to the second (`2026-11-23 11:04:58`). */
export function toSecond(iso: string): string {
  return iso.slice(0, 19).replace('T', ' ');
}

export { durationText } from '../domain/readable-time.ts';

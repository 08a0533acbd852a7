import type { CountedValue } from '../domain/accounts/account-activity.ts';
import { countOf, countText } from '../domain/readable-numbers.ts';
import { html, type Html } from './html.ts';

/**
 * Charts drawn on the server as inline SVG: nothing to load, nothing to run, readable with the
 * page's own styles (light and dark) and by screen readers (each has a title and each bar its
 * value). Labels are attacker-written text (a User-Agent), escaped like everything else.
 */

const ROW = 22;
/** The label column: room for the 18 characters a label is cut to, at 12px. */
const LABEL_WIDTH = 150;
const BAR_WIDTH = 170;
const AXIS = 18;

/**
 * The chart's numbers as a table, behind a disclosure: what a screen reader or a keyboard reads
 * instead of the picture, and what anyone can copy. Linked values link here too.
 */
function picture(label: string, width: number, height: number, content: Html[], linked = false): Html {
  // Drawn at its own size (12px text stays 12px in a wide column), shrunk only where the page is
  // narrower. An image's content is presentational to assistive technology, so a chart whose
  // bars are links is a named group of them instead.
  return html`<svg role="${linked ? 'group' : 'img'}" aria-label="${label}" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" preserveAspectRatio="xMinYMin meet">${content}</svg>`;
}

/** "1 event", "2 events". */
function events(n: number): string {
  return countOf(n, 'event');
}

function dataTable(title: string, head: [string, string], rows: CountedValue[], linkOf?: (value: string) => string): Html {
  const body = rows.map((r) => html`<tr><th scope="row">${linkOf && r.value ? html`<a href="${linkOf(r.value)}">${r.value}</a>` : r.value || '(empty)'}</th><td>${countText(r.count)}</td></tr>`);
  return html`<details class="chart-data"><summary>The numbers</summary><table><caption class="visually-hidden">${title}</caption><thead><tr><th scope="col">${head[0]}</th><th scope="col">${head[1]}</th></tr></thead><tbody>${body}</tbody></table></details>`;
}

/**
 * Horizontal bars, one per value, longest first as given, on a count axis; with `linkOf`, each
 * bar (and its row in the data table) links to its value's page. A label longer than fits is
 * cut at its end, the whole value in the bar's title (shown on hover and read by screen readers).
 */
export function barChart(title: string, rows: CountedValue[], linkOf?: (value: string) => string): Html {
  if (rows.length === 0) return html`<figure class="chart"><figcaption>${title}</figcaption><p class="empty">Nothing in this period.</p></figure>`;
  const max = Math.max(...rows.map((r) => r.count));
  const height = rows.length * ROW + 4;
  const bars = rows.map((r, i) => {
    const y = i * ROW + 2;
    const width = Math.max(1, Math.round((r.count / max) * BAR_WIDTH));
    const label = shorten(r.value || '(empty)');
    // The space between label and count keeps them two words to whatever reads the bar's text (axe's label-in-name check among them).
    const bar = html`<g><title>${r.value || '(empty)'}: ${countText(r.count)}</title><text x="${LABEL_WIDTH - 6}" y="${y + 15}" class="label" text-anchor="end">${label}</text> <rect x="${LABEL_WIDTH}" y="${y + 3}" width="${width}" height="${ROW - 6}" class="bar"></rect><text x="${LABEL_WIDTH + width + 4}" y="${y + 15}" class="value">${countText(r.count)}</text></g>`;
    // An SVG link is reached by the keyboard like any other; named once, not by its title and its texts run together.
    // Its name starts with what it shows (WCAG 2.5.3, label in name); a cut label is followed by the whole value.
    const name = label === r.value ? `${r.value}: ${events(r.count)}` : `${label} ${events(r.count)} (${r.value})`;
    return linkOf && r.value ? html`<a href="${linkOf(r.value)}" aria-label="${name}">${bar}</a>` : bar;
  });
  const axis = html`<g class="axis"><line x1="${LABEL_WIDTH}" y1="${height}" x2="${LABEL_WIDTH + BAR_WIDTH}" y2="${height}"></line><text x="${LABEL_WIDTH}" y="${height + 14}" text-anchor="start">0</text><text x="${LABEL_WIDTH + BAR_WIDTH}" y="${height + 14}" text-anchor="end">${events(max)}</text></g>`;
  return html`<figure class="chart"><figcaption>${title}</figcaption>${picture(title, LABEL_WIDTH + BAR_WIDTH + 50, height + AXIS, [...bars, axis], linkOf !== undefined)}${dataTable(title, ['Value', 'Events'], rows, linkOf)}</figure>`;
}

/**
 * Vertical bars over time, one per bucket, oldest left, on an axis of events per bucket. A
 * bucket the period covers only in part (its first, begun before the period did; its last, still
 * going) is drawn paler with a dashed edge and said to be partial, so it never reads as a dip.
 */
export function timeChart(title: string, rows: CountedValue[], unit = 'bucket', partial: { first: boolean; last: boolean } = { first: false, last: false }): Html {
  const max = Math.max(0, ...rows.map((r) => r.count));
  if (max === 0) return html`<figure class="chart"><figcaption>${title}</figcaption><p class="empty">No events in this period.</p></figure>`;
  const left = 40;
  const width = 360;
  const height = 140;
  const step = (width - left) / rows.length;
  const isPartial = (i: number) => (i === 0 && partial.first) || (i === rows.length - 1 && partial.last);
  const bars = rows.map((r, i) => {
    // An empty bucket is a gap; any event at all shows.
    const h = r.count === 0 ? 0 : Math.max(1, Math.round((r.count / max) * (height - 20)));
    return html`<rect x="${(left + i * step + 0.5).toFixed(1)}" y="${height - h}" width="${Math.max(1, step - 1).toFixed(1)}" height="${h}" class="bar${isPartial(i) ? ' partial' : ''}"><title>${bucketText(r.value)}: ${events(r.count)}${isPartial(i) ? ' (partial)' : ''}</title></rect>`;
  });
  const partialNote = partial.first && partial.last ? `the first and last ${unit} partial` : partial.first ? `the first ${unit} partial` : partial.last ? `the last ${unit} partial, still going` : '';
  const first = bucketText(rows[0]!.value);
  const last = bucketText(rows.at(-1)!.value);
  // A tick halfway up when it is a whole number of events, so the bars can be read against more than 0 and the top.
  const mid = max >= 2 && max % 2 === 0 ? html`<line x1="${left - 3}" y1="${height - (height - 20) / 2}" x2="${left}" y2="${height - (height - 20) / 2}"></line><text x="${left - 4}" y="${height - (height - 20) / 2 + 4}" text-anchor="end">${countText(max / 2)}</text>` : '';
  const axes = html`<g class="axis"><line x1="${left}" y1="${height}" x2="${width}" y2="${height}"></line><line x1="${left}" y1="20" x2="${left}" y2="${height}"></line><text x="${left - 4}" y="24" text-anchor="end">${countText(max)}</text>${mid}<text x="${left - 4}" y="${height}" text-anchor="end">0</text><text x="${left}" y="${height + 14}">${first}</text><text x="${width}" y="${height + 14}" text-anchor="end">${last}</text></g>`;
  const tableRows = rows.map((r, i) => (isPartial(i) ? { ...r, value: `${r.value} (partial)` } : r));
  return html`<figure class="chart"><figcaption>${title} (UTC; at most ${events(max)} in a${unit === 'hour' ? 'n' : ''} ${unit}${partialNote ? `; ${partialNote}, drawn paler` : ''})</figcaption>${picture(title, width, height + AXIS, [...bars, axes])}${dataTable(title, [unit === 'hour' ? 'Hour (UTC)' : 'Day (UTC)', 'Events'], tableRows)}</figure>`;
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** A bucket as people read it: `2026-11-30` as "30 Nov", `2026-11-30T14` as "30 Nov 14:00". */
function bucketText(bucket: string): string {
  const match = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}))?$/.exec(bucket);
  if (!match) return bucket;
  const day = `${Number(match[3])} ${MONTHS[Number(match[2]) - 1]}`;
  return match[4] === undefined ? day : `${day} ${match[4]}:00`;
}

const WEEKDAYS = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'];

/**
 * A week of hours: one cell per weekday and hour of day (UTC), darker the more events, so the
 * hours attackers keep stand out. Each cell names its count; the data table lists them all.
 */
export function weekHeatmap(title: string, grid: number[][]): Html {
  const max = Math.max(0, ...grid.flat());
  if (max === 0) return html`<figure class="chart"><figcaption>${title}</figcaption><p class="empty">No events in this period.</p></figure>`;
  const left = 34;
  const cell = 13;
  const cells = grid.flatMap((hours, day) =>
    hours.map(
      (n, hour) =>
        html`<rect x="${left + hour * cell}" y="${day * cell + 2}" width="${cell - 1}" height="${cell - 1}" class="${n === 0 ? 'track' : 'bar'}" fill-opacity="${n === 0 ? 1 : (0.2 + 0.8 * (n / max)).toFixed(2)}"><title>${WEEKDAYS[day]} ${String(hour).padStart(2, '0')}:00–${String(hour + 1).padStart(2, '0')}:00 UTC: ${countOf(n, 'event')}</title></rect>`,
    ),
  );
  const rows = WEEKDAYS.map((d, day) => html`<text x="${left - 4}" y="${day * cell + 12}" text-anchor="end">${d}</text>`);
  const hours = [0, 6, 12, 18].map((h) => html`<text x="${left + h * cell}" y="${7 * cell + 14}">${String(h).padStart(2, '0')}</text>`);
  // The legend: what the shades mean, from no event to the busiest hour.
  const y = 7 * cell + AXIS + 6;
  const shades = [['track', 1], ['bar', 0.2], ['bar', 0.6], ['bar', 1]] as const;
  const legend = html`<g class="legend"><text x="${left - 4}" y="${y + 10}" text-anchor="end">0</text>${shades.map(([kind, opacity], i) => html`<rect x="${left + i * cell}" y="${y}" width="${cell - 1}" height="${cell - 1}" class="${kind}" fill-opacity="${opacity}"></rect>`)}<text x="${left + shades.length * cell + 4}" y="${y + 10}">${events(max)} in an hour</text></g>`;
  const table = html`<details class="chart-data"><summary>The numbers</summary><div class="scroll" tabindex="0" role="region" aria-label="The numbers of ${title}"><table><caption class="visually-hidden">${title}</caption><thead><tr><th scope="col">Day</th>${Array.from({ length: 24 }, (_, h) => html`<th scope="col">${String(h).padStart(2, '0')}</th>`)}</tr></thead><tbody>${grid.map((hoursOf, day) => html`<tr><th scope="row">${WEEKDAYS[day]}</th>${hoursOf.map((n) => html`<td>${countText(n)}</td>`)}</tr>`)}</tbody></table></div></details>`;
  return html`<figure class="chart"><figcaption>${title} (UTC, at most ${countText(max)} in an hour)</figcaption>${picture(title, left + 24 * cell, 7 * cell + AXIS + 2 + cell + 8, [...cells, ...rows, ...hours, legend])}${table}</figure>`;
}

/** A used/limit gauge as a single bar. */
export function usageBar(title: string, used: number, limit: number): Html {
  const width = 400;
  const filled = limit > 0 ? Math.round((Math.min(used, limit) / limit) * width) : 0;
  return html`<figure class="chart"><figcaption>${title}: ${countText(used)} of ${countText(limit)}</figcaption>${picture(`${title}: ${countText(used)} of ${countText(limit)}`, width, 20, [html`<rect x="0" y="2" width="${width}" height="16" class="track"></rect><rect x="0" y="2" width="${filled}" height="16" class="bar"></rect>`])}</figure>`;
}

/** A label cut at its end to what fits beside the bars (the whole value is in the bar's title). */
function shorten(text: string): string {
  const chars = [...text];
  // 18 characters of the widest letters still fit the label column at 12px; 22 did not ("isco-SIPGateway/IOS-…").
  return chars.length > 18 ? `${chars.slice(0, 17).join('')}…` : text;
}

import type { CountedValue } from '../domain/account-activity.ts';
import { html, type Html } from './html.ts';

/**
 * Charts drawn on the server as inline SVG: nothing to load, nothing to run, readable with the
 * page's own styles (light and dark) and by screen readers (each has a title and each bar its
 * value). Labels are attacker-written text (a User-Agent), escaped like everything else.
 */

const ROW = 22;
const LABEL_WIDTH = 220;
const BAR_WIDTH = 300;

/** Horizontal bars, one per value, longest first as given; with `linkOf`, each bar links to its value's page. */
export function barChart(title: string, rows: CountedValue[], linkOf?: (value: string) => string): Html {
  if (rows.length === 0) return html`<figure class="chart"><figcaption>${title}</figcaption><p class="empty">Nothing in this period.</p></figure>`;
  const max = Math.max(...rows.map((r) => r.count));
  const height = rows.length * ROW + 4;
  const bars = rows.map((r, i) => {
    const y = i * ROW + 2;
    const width = Math.max(1, Math.round((r.count / max) * BAR_WIDTH));
    const bar = html`<g><title>${r.value || '(empty)'}: ${r.count}</title><text x="${LABEL_WIDTH - 6}" y="${y + 15}" class="label" text-anchor="end">${shorten(r.value || '(empty)')}</text><rect x="${LABEL_WIDTH}" y="${y + 3}" width="${width}" height="${ROW - 6}" class="bar"></rect><text x="${LABEL_WIDTH + width + 4}" y="${y + 15}" class="value">${r.count}</text></g>`;
    // An SVG link is reached by the keyboard like any other, and named by the bar's title.
    return linkOf && r.value ? html`<a href="${linkOf(r.value)}">${bar}</a>` : bar;
  });
  return html`<figure class="chart"><figcaption>${title}</figcaption><svg role="img" aria-label="${title}" viewBox="0 0 ${LABEL_WIDTH + BAR_WIDTH + 70} ${height}" preserveAspectRatio="xMinYMin meet">${bars}</svg></figure>`;
}

/** Vertical bars over time, one per bucket, oldest left. */
export function timeChart(title: string, rows: CountedValue[]): Html {
  const max = Math.max(0, ...rows.map((r) => r.count));
  if (max === 0) return html`<figure class="chart"><figcaption>${title}</figcaption><p class="empty">No events in this period.</p></figure>`;
  const width = 600;
  const height = 160;
  const step = width / rows.length;
  const bars = rows.map((r, i) => {
    // An empty bucket is a gap; any event at all shows.
    const h = r.count === 0 ? 0 : Math.max(1, Math.round((r.count / max) * (height - 20)));
    return html`<rect x="${(i * step + 1).toFixed(1)}" y="${height - h}" width="${Math.max(1, step - 2).toFixed(1)}" height="${h}" class="bar"><title>${r.value}: ${r.count}</title></rect>`;
  });
  const first = rows[0]!.value;
  const last = rows.at(-1)!.value;
  return html`<figure class="chart"><figcaption>${title} (most ${max} per bucket)</figcaption><svg role="img" aria-label="${title}" viewBox="0 0 ${width} ${height + 18}" preserveAspectRatio="xMinYMin meet">${bars}<text x="0" y="${height + 14}" class="label">${first}</text><text x="${width}" y="${height + 14}" class="label" text-anchor="end">${last}</text></svg></figure>`;
}

/** A used/limit gauge as a single bar. */
export function usageBar(title: string, used: number, limit: number): Html {
  const width = 400;
  const filled = limit > 0 ? Math.round((Math.min(used, limit) / limit) * width) : 0;
  return html`<figure class="chart"><figcaption>${title}: ${used} of ${limit}</figcaption><svg role="img" aria-label="${title}: ${used} of ${limit}" viewBox="0 0 ${width} 20"><rect x="0" y="2" width="${width}" height="16" class="track"></rect><rect x="0" y="2" width="${filled}" height="16" class="bar"></rect></svg></figure>`;
}

function shorten(text: string): string {
  const chars = [...text];
  return chars.length > 32 ? `${chars.slice(0, 31).join('')}…` : text;
}

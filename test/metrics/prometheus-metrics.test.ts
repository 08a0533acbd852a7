import { describe, expect, it } from 'vitest';
import { PrometheusMetrics } from '../../src/metrics/prometheus-metrics.ts';

/** The value of one sample line of a text exposition, by its exact name and labels. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

const FOUND = 'tollwatch_lookups_total{kind="phone",mode="single",result="found"}';
const ANSWERED = 'tollwatch_http_requests_total{route="/api/phone-numbers/:phone_number",method="GET",status="200"}';

describe('tallied counters (counts kept as numbers, handed to prom-client at a scrape)', () => {
  it('expose a series at 0 before its first count, then exact counts however often scraped', async () => {
    const metrics = new PrometheusMetrics();
    const route = metrics.route('/api/phone-numbers/:phone_number');
    expect(sample(await metrics.registry.metrics(), FOUND)).toBe(0);

    for (let i = 0; i < 3; i++) metrics.lookups('phone', 'single', 'found');
    metrics.lookups('phone', 'bulk', 'found', 5);
    route.answered('GET', 200, 1.5);
    route.answered('GET', 200, 0.5);
    const first = await metrics.registry.metrics();
    expect(sample(first, FOUND)).toBe(3);
    expect(sample(first, 'tollwatch_lookups_total{kind="phone",mode="bulk",result="found"}')).toBe(5);
    expect(sample(first, ANSWERED)).toBe(2);
    expect(sample(first, 'tollwatch_http_request_duration_seconds_count{route="/api/phone-numbers/:phone_number",method="GET"}')).toBe(2);

    // A second scrape neither counts the same answers again nor forgets them.
    const again = await metrics.registry.metrics();
    expect(sample(again, FOUND)).toBe(3);
    expect(sample(again, ANSWERED)).toBe(2);

    metrics.lookups('phone', 'single', 'found');
    route.answered('GET', 200, 1);
    const later = await metrics.registry.metrics();
    expect(sample(later, FOUND)).toBe(4);
    expect(sample(later, ANSWERED)).toBe(3);
  });

  it('are handed over when the registry is read as JSON too, as the cluster primary gathers it', async () => {
    const metrics = new PrometheusMetrics();
    metrics.eventsIngested('batch', 'created', 1000);
    metrics.tokenIssued();
    metrics.tokenRefused('invalid_client');
    metrics.rateLimited('lookups');
    const json = await metrics.registry.getMetricsAsJSON();
    const value = (name: string, labels: Record<string, string> = {}) =>
      json.find((m) => m.name === name)!.values.find((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l))?.value;
    expect(value('tollwatch_events_ingested_total', { mode: 'batch', outcome: 'created' })).toBe(1000);
    expect(value('tollwatch_events_ingested_total', { mode: 'single', outcome: 'created' })).toBe(0);
    expect(value('tollwatch_tokens_issued_total')).toBe(1);
    expect(value('tollwatch_token_refusals_total', { reason: 'invalid_client' })).toBe(1);
    expect(value('tollwatch_rate_limited_total', { limit: 'lookups' })).toBe(1);
  });
});

import type { FastifyInstance } from 'fastify';
import { OVERVIEW_PERIODS } from '../../domain/accounts/account-activity.ts';
import type { Services } from '../../services.ts';
import { html, type Html } from '../html.ts';
import { sendPage } from '../layout.ts';
import { addressPath, numberPath } from '../subject-links.ts';
import { barChart, timeChart, usageBar, weekHeatmap } from '../svg-charts.ts';
import { accountOf } from '../web-session.ts';
import { usageOf } from './account.ts';

/** What these routes use of the services. */
type RouteServices = Pick<Services, 'activity' | 'limiter' | 'plans'>;

/** Overview (docs/dashboard.md): charts of the account's own events in a period, and its lookup use. */
export async function overviewRoutes(app: FastifyInstance, { services }: { services: RouteServices }) {
  app.get('/overview', { config: { web: 'account' } }, async (request, reply) => {
    const account = accountOf(request);
    const asked = Number((request.query as Record<string, unknown>).days);
    const days = (OVERVIEW_PERIODS as readonly number[]).includes(asked) ? asked : 7;
    const [o, plan] = await Promise.all([services.activity.overview(account, days), services.plans.find(account.plan)]);
    const usage = plan ? await usageOf(services, account, plan) : [];
    const periods = OVERVIEW_PERIODS.map((d) => html`<a href="/overview?days=${d}"${d === days ? html` aria-current="true"` : ''}>${d === 1 ? 'last 24 hours' : `last ${d} days`}</a>`);
    const empty = o.overTime.every((b) => b.count === 0);
    // An account that submits no events and has none: the event charts would be so many empty
    // cards, so it sees what it can do and its lookups' use alone.
    const lookupsOnly = empty && !(plan?.maySubmit ?? false);
    const usageCharts = usage.map((u) => usageBar(`${u.label}, this window`, u.used, u.window.limit));
    const content = html`<p class="periods">Period: ${periods.map((p, i) => html`${i > 0 ? ' · ' : ''}${p}`)}</p>
${empty ? firstSteps(plan?.maySubmit ?? false, days) : ''}
${lookupsOnly ? html`<div class="charts">${usageCharts}</div>` : html`<div class="charts">
${timeChart(o.bucket === 'hour' ? 'Events per hour' : 'Events per day', o.overTime, o.bucket, { first: !startsBucket(o.since, o.bucket), last: true })}
${weekHeatmap('Events by weekday and hour', o.weekHours)}
${barChart('Top called numbers', o.calledNumbers, numberPath)}
${barChart('Top source addresses', o.sourceAddresses, addressPath)}
${barChart('SIP methods', o.methods)}
${barChart('Transports', o.transports)}
${barChart('User agents', o.userAgents)}
${barChart('Countries of called numbers', o.countries)}
${usageCharts}
</div>`}`;
    return sendPage(request, reply, 'Overview', content);
  });
}

/**
 * Whether the period begins where its first bucket does: it rarely does (the period is the last
 * N days from now), so its first hour or day holds only part of its events. The last is the one
 * still going.
 */
function startsBucket(since: string, bucket: 'hour' | 'day'): boolean {
  const at = new Date(since);
  return at.getUTCMinutes() === 0 && at.getUTCSeconds() === 0 && at.getUTCMilliseconds() === 0 && (bucket === 'hour' || at.getUTCHours() === 0);
}

/** What to do when there is nothing to chart: how events reach this account, or what else it can do. */
function firstSteps(maySubmit: boolean, days: number): Html {
  const period = days === 1 ? 'the last 24 hours' : `the last ${days} days`;
  if (!maySubmit) {
    return html`<div class="notice" role="status"><p>No events of this account’s own in ${period}: this plan looks up numbers and addresses but does not submit events.</p><p>Create a client on <a href="/settings/clients">the clients page</a> and look numbers up from your PBX or SBC, or try one on the <a href="/lookup">Lookup</a> page.</p></div>`;
  }
  return html`<div class="notice" role="status"><p>No events of this account’s own in ${period}. To send some:</p>
<ol><li>Create a client with <code>write:events</code> on <a href="/settings/clients">the clients page</a>;</li>
<li>start a SentryPeer node with its id and secret, as <a href="/settings/account">the account page</a> shows (or with a node ingest URL from your operator);</li>
<li>its probes appear here within a second of arriving.</li></ol></div>`;
}

import type { FastifyInstance } from 'fastify';
import { OVERVIEW_PERIODS } from '../../domain/account-activity.ts';
import type { Services } from '../../services.ts';
import { html } from '../html.ts';
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
    const content = html`<p class="periods">Period: ${periods.map((p, i) => html`${i > 0 ? ' · ' : ''}${p}`)}</p>
<div class="charts">
${timeChart(o.bucket === 'hour' ? 'Events per hour' : 'Events per day', o.overTime, o.bucket)}
${weekHeatmap('Events by weekday and hour', o.weekHours)}
${barChart('Top called numbers', o.calledNumbers, numberPath)}
${barChart('Top source addresses', o.sourceAddresses, addressPath)}
${barChart('SIP methods', o.methods)}
${barChart('Transports', o.transports)}
${barChart('User agents', o.userAgents)}
${barChart('Countries of called numbers', o.countries)}
${usage.map((u) => usageBar(`${u.label}, this window`, u.used, u.window.limit))}
</div>`;
    return sendPage(request, reply, 'Overview', content);
  });
}

import type { FastifyInstance, FastifyRequest } from 'fastify';
import { MAX_DECLINE_REASON } from '../../domain/accounts/contributor-requests.ts';
import type { Services } from '../../services.ts';
import { formText } from '../form.ts';
import { html } from '../html.ts';
import { csrfField, sendPage } from '../layout.ts';
import { toMinute } from '../time-text.ts';
import { userOf } from '../web-session.ts';

/** What these routes use of the services. */
type RouteServices = Pick<Services, 'accounts' | 'config' | 'contributorRequests'>;

/**
 * The operator's queue of requests for the contributor plan (docs/dashboard.md, "Becoming a
 * contributor"), through the service `tollwatch contributors` calls.
 */
export async function operatorContributorRoutes(app: FastifyInstance, { services }: { services: RouteServices }) {
  const actor = (request: FastifyRequest) => `user:${userOf(request).user_id}`;

  app.get('/operator/contributors', { config: { web: 'operator' } }, async (request, reply) => {
    const [open, accounts] = await Promise.all([services.contributorRequests.list('open'), services.accounts.listAccounts()]);
    const names = new Map(accounts.map((a) => [a.account_id, a.name]));
    const rows = open.map(
      (r) => html`<tr><td>${toMinute(r.created_at)}</td><td>${names.get(r.account_id) ?? ''}<br><code>${r.account_id}</code></td><td class="prose">${r.honeypots}</td><td>
<form method="post" action="/operator/contributors/${r.request_id}/approve" class="inline">${csrfField(request)}<button type="submit" aria-label="Approve ${names.get(r.account_id) ?? r.account_id}">Approve</button></form>
<form method="post" action="/operator/contributors/${r.request_id}/decline" class="inline">${csrfField(request)}
<label for="reason-${r.request_id}">Reason to decline (mailed to the owners)</label><input id="reason-${r.request_id}" name="reason" required maxlength="${MAX_DECLINE_REASON}">
<button type="submit">Decline</button></form></td></tr>`,
    );
    const automatic = services.config.dashboard.contributorApproval === 'automatic';
    return sendPage(
      request,
      reply,
      'Contributor requests',
      html`<p>Owners ask for the contributor plan from their account page. Approving moves the account to the plan (trust in its events stays a separate choice, on Accounts); declining keeps its plan and mails the owners the reason. ${automatic ? 'Approval is automatic here (TOLLWATCH_CONTRIBUTOR_APPROVAL): requests are approved as they are made.' : ''} The same queue is <code>tollwatch contributors list</code>.</p>
<h2>Open (${open.length})</h2>${open.length === 0 ? html`<p>No open requests.</p>` : html`<div class="scroll" tabindex="0" role="region" aria-label="Open requests"><table><thead><tr><th scope="col">Asked (UTC)</th><th scope="col">Account</th><th scope="col">Their honeypots</th><th scope="col">Decision</th></tr></thead><tbody>${rows}</tbody></table></div>`}`,
    );
  });

  app.post('/operator/contributors/:id/approve', { config: { web: 'operator' } }, async (request, reply) => {
    await services.contributorRequests.approve((request.params as { id: string }).id, actor(request));
    return reply.redirect('/operator/contributors', 303);
  });

  app.post('/operator/contributors/:id/decline', { config: { web: 'operator' } }, async (request, reply) => {
    await services.contributorRequests.decline((request.params as { id: string }).id, formText(request, 'reason'), actor(request));
    return reply.redirect('/operator/contributors', 303);
  });
}

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ServiceError } from '../../domain/errors.ts';
import { canonicalIpAddress } from '../../domain/ip-address.ts';
import { allowanceRefusal } from '../../limits/plan-limiter.ts';
import type { Services } from '../../services.ts';
import { formText } from '../form.ts';
import { html, type Html } from '../html.ts';
import { csrfField, sendPage } from '../layout.ts';
import { WebRefusal } from '../web-refusal.ts';
import { accountOf } from '../web-session.ts';

/** What these routes use of the services. */
type RouteServices = Pick<Services, 'limiter' | 'lookups' | 'plans'>;

/**
 * Lookup (docs/dashboard.md): a number or an address, answered by the lookup service the API
 * routes call (docs/api.md §7), with this account's scopes, and spending the plan's lookups
 * allowance as an API lookup does. A POST with the CSRF token: it spends, so no other site may
 * make a signed-in browser send one.
 */
export async function lookupRoute(app: FastifyInstance, { services }: { services: RouteServices }) {
  app.get('/lookup', { config: { web: 'account' } }, async (request, reply) => lookupPage(request, reply, ''));

  app.post('/lookup', { config: { web: 'account' } }, async (request, reply) => {
    const account = accountOf(request);
    const value = formText(request, 'q').trim();
    const plan = await services.plans.find(account.plan);
    const spent = plan && services.limiter.spend('lookups', plan, account.account_id);
    if (plan && spent) {
      const state = await spent.state;
      if (!state.allowed) throw new WebRefusal(429, `${capitalised(allowanceRefusal(plan, 'lookups', spent.window, state))}.`, state.resetSeconds);
    }
    try {
      const answer = canonicalIpAddress(value) ? await services.lookups.ipAddress(account, value) : await services.lookups.phoneNumber(account, value);
      const summary = html`<p class="${answer.found ? 'seen' : 'unseen'}" role="status"><strong>${answer.found ? 'SEEN' : 'Not seen'}</strong>: ${answer.message}</p>${answer.found ? whyFlagged(answer.score, answer.reasons) : ''}`;
      return lookupPage(request, reply, value, html`${summary}<h2>The API’s answer</h2><pre class="answer">${JSON.stringify(answer, null, 2)}</pre>`);
    } catch (err) {
      if (err instanceof ServiceError && err.code === 'invalid_phone_number') {
        return lookupPage(request, reply, value, html`<p class="error" role="alert">Neither an IPv4 or IPv6 address nor a phone number: ${err.message}.</p>`, 400);
      }
      throw err;
    }
  });
}

/** The score and the facts behind it (docs/scoring.md), before the JSON that carries them too. */
function whyFlagged(score: number, reasons: readonly string[]): Html {
  return html`<h2>Score <meter min="0" max="100" low="30" high="70" optimum="0" value="${score}">${score}</meter> ${score} of 100</h2>
<ul class="reasons">${reasons.map((r) => html`<li>${r}</li>`)}</ul>
<p>How the score is made: docs/scoring.md. Evidence counts less as it ages.</p>`;
}

function lookupPage(request: FastifyRequest, reply: FastifyReply, value: string, answer?: Html, status = 200) {
  return sendPage(
    request,
    reply,
    'Lookup',
    html`<form method="post" action="/lookup" class="inline">${csrfField(request)}
<label for="q">Phone number or source address</label>
<input id="q" name="q" value="${value}" required maxlength="512" placeholder="+46812118532 or 203.0.113.7">
<button type="submit">Look up</button></form>
<p>Answered exactly as the API answers this account, from its own events and the shared data set; each lookup counts against the plan.</p>
${answer}`,
    status,
  );
}

function capitalised(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

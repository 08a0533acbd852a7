import { toolNames } from '../../domain/intelligence/scanner-tags.ts';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Account } from '../../domain/accounts/accounts.ts';
import { ServiceError } from '../../domain/errors.ts';
import { canonicalIpAddress } from '../../domain/ip-address.ts';
import type { Services } from '../../services.ts';
import { formText } from '../form.ts';
import { html, type Html } from '../html.ts';
import { sendPage } from '../layout.ts';
import { addressPath, numberPath } from '../subject-links.ts';
import { WebRefusal } from '../web-refusal.ts';
import { accountOf } from '../web-session.ts';

/** What these routes use of the services. */
type RouteServices = Pick<Services, 'lookups' | 'spendAllowance'>;

/**
 * Spends one lookup of the account's plan, as an API lookup does, or refuses with 429 when the
 * allowance is spent. The lookup page and the number and address pages each answer with a lookup.
 */
export async function spendLookup(services: Pick<Services, 'spendAllowance'>, account: Account): Promise<void> {
  const spent = await services.spendAllowance('lookups', account);
  if (!spent.allowed) throw new WebRefusal(429, `${capitalised(spent.refusal)}.`, spent.retryAfterSeconds);
}

/**
 * Lookup (docs/dashboard.md): a number or an address, answered by the lookup service the API
 * routes call (docs/api.md §7), with this account's scopes, and spending the plan's lookups
 * allowance as an API lookup does. A GET (`/lookup?q=…`), so a lookup has a URL to keep and
 * share. Cross-site requests cannot spend it unseen: the session cookie is SameSite=Lax, sent
 * only on a top-level navigation, which shows the person the page it spent for.
 */
export async function lookupRoute(app: FastifyInstance, { services }: { services: RouteServices }) {
  app.get('/lookup', { config: { web: 'account' } }, async (request, reply) => {
    const value = (typeof (request.query as Record<string, unknown>).q === 'string' ? ((request.query as Record<string, string>).q ?? '') : '').trim();
    if (value === '') return lookupPage(request, reply, '');
    const account = accountOf(request);
    await spendLookup(services, account);
    try {
      const address = canonicalIpAddress(value);
      const answer = address ? await services.lookups.ipAddress(account, value) : await services.lookups.phoneNumber(account, value);
      const page = address ? addressPath(address) : 'phone_number' in answer ? numberPath(answer.phone_number) : '';
      const summary = html`<p class="${answer.found ? 'seen' : 'unseen'}" role="status"><strong>${answer.found ? 'SEEN' : 'Not seen'}</strong>: ${answer.message}</p>${answer.found ? whyFlagged(answer.score, answer.reasons) : ''}${answer.found && 'tags' in answer && answer.tags.length > 0 ? html`<p>Its User-Agents name <strong>${toolNames(answer.tags)}</strong>: what the header claims, not proof of who sent it.</p>` : ''}${answer.found && page ? html`<p><a href="${page}">Everything about ${value}: its events, activity and what it is paired with →</a></p>` : ''}`;
      return lookupPage(request, reply, value, html`${summary}<h2>The API’s answer</h2><pre class="answer">${JSON.stringify(answer, null, 2)}</pre>`);
    } catch (err) {
      if (err instanceof ServiceError && err.code === 'invalid_phone_number') {
        return lookupPage(request, reply, value, html`<p class="error" role="alert">Neither an IPv4 or IPv6 address nor a phone number: ${err.message}.</p>`, 400);
      }
      throw err;
    }
  });

  // The form of earlier pages posted: answered with the lookup's own URL.
  app.post('/lookup', { config: { web: 'account' } }, async (request, reply) => reply.redirect(`/lookup?${new URLSearchParams({ q: formText(request, 'q').trim() }).toString()}`, 303));
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
    html`<form method="get" action="/lookup" class="inline">
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

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { CONTRIBUTOR_PLAN, MAX_HONEYPOTS_TEXT, type ContributorRequest } from '../../domain/accounts/contributor-requests.ts';
import { BOARD_DAYS } from '../../domain/accounts/contributors-board.ts';
import { ServiceError } from '../../domain/errors.ts';
import { countText } from '../../domain/readable-numbers.ts';
import type { Services } from '../../services.ts';
import { FieldErrors } from '../field-errors.ts';
import { formText } from '../form.ts';
import { html, type Html } from '../html.ts';
import { csrfField, sendPage } from '../layout.ts';
import { toMinute } from '../time-text.ts';
import { accountOf, userOf } from '../web-session.ts';

/** What these routes use of the services. */
export type CommunityServices = Pick<Services, 'contributorRequests' | 'contributorsBoard'>;

/**
 * An account's side of the community (docs/dashboard.md, "Becoming a contributor" and "The
 * contributors' board"): the owner asks for the contributor plan and chooses whether, and under
 * which alias, the account shows on the board; every signed-in user reads the board.
 */
export async function contributorRoutes(app: FastifyInstance, { services }: { services: CommunityServices }) {
  app.get('/contributors', { config: { web: 'signed-in' } }, async (request, reply) => {
    const board = await services.contributorsBoard.board();
    const rows = board.lines.map((l) => html`<tr><td>${l.rank}</td><th scope="row">${l.alias}</th><td>${countText(l.events)}</td><td>${countText(l.numbers)}</td></tr>`);
    const others = board.others
      ? html`<tr class="others"><td></td><th scope="row">Others (${countText(board.others.accounts)} ${board.others.accounts === 1 ? 'account' : 'accounts'} not on the board)</th><td>${countText(board.others.events)}</td><td>${countText(board.others.numbers)}</td></tr>`
      : '';
    const content = html`<p>The accounts whose events form the shared data set, by their events and the distinct numbers called in them over the last ${BOARD_DAYS} days (since ${toMinute(board.since)} UTC). An account is named only by the alias its owner chose; the rest are summed as others. Counted at ${toMinute(board.computed_at)} UTC, at most once a minute.</p>
${board.lines.length === 0 && !board.others ? html`<p>No events in the shared data set in the last ${BOARD_DAYS} days.</p>` : html`<div class="scroll" tabindex="0" role="region" aria-label="Contributors"><table><thead><tr><th scope="col">Rank</th><th scope="col">Contributor</th><th scope="col">Events</th><th scope="col">Distinct numbers</th></tr></thead><tbody>${rows}${others}</tbody></table></div>`}
${request.web.account ? html`<p>Your account’s place on the board is chosen on the <a href="/settings/account#community">account page</a>.</p>` : ''}`;
    return sendPage(request, reply, 'Contributors', content);
  });

  app.post('/settings/account/contributor', { config: { web: 'owner' } }, async (request, reply) => {
    try {
      await services.contributorRequests.request(userOf(request), formText(request, 'honeypots'), request.ip);
    } catch (err) {
      if (err instanceof ServiceError && err.code === 'validation_failed') return refusedPage(services, request, reply, err, { honeypots: formText(request, 'honeypots') });
      throw err;
    }
    return reply.redirect('/settings/account#community', 303);
  });

  app.post('/settings/account/board', { config: { web: 'owner' } }, async (request, reply) => {
    const owner = userOf(request);
    try {
      if (formText(request, 'join') === 'yes') await services.contributorsBoard.join(owner, formText(request, 'alias'));
      else await services.contributorsBoard.leave(owner);
    } catch (err) {
      if (err instanceof ServiceError && err.code === 'validation_failed') return refusedPage(services, request, reply, err, { alias: formText(request, 'alias') });
      throw err;
    }
    return reply.redirect('/settings/account#community', 303);
  });
}

/** A refused community form, alone on its page with the reason beside its field. */
async function refusedPage(services: CommunityServices, request: FastifyRequest, reply: FastifyReply, err: ServiceError, given: { honeypots?: string; alias?: string }) {
  return sendPage(request, reply, 'Community', html`<div class="error" role="alert"><p>Nothing was changed:</p>${new FieldErrors(err, FIELD_LABELS).summary()}</div>${await communitySection(services, request, { err, ...given })}`, 422);
}

const FIELD_LABELS = { honeypots: 'The description of your honeypots', alias: 'The alias', request_id: 'The request' };

/**
 * The account page's part on the community: the contributor plan (asked for, pending, declined
 * with its reason) and the board (on it under an alias, or not). Owners get the forms.
 */
export async function communitySection(services: CommunityServices, request: FastifyRequest, refused?: { err: ServiceError; honeypots?: string; alias?: string }): Promise<Html> {
  const account = accountOf(request);
  const owner = userOf(request).role === 'owner';
  const [latest, alias] = await Promise.all([services.contributorRequests.latestOf(account.account_id), services.contributorsBoard.aliasOf(account.account_id)]);
  const errors = new FieldErrors(refused?.err, FIELD_LABELS);
  return html`<section aria-labelledby="community"><h2 id="community">Community</h2>
<h3>Contributor plan</h3>
${contributorState(account.plan, latest)}
${owner && account.plan !== CONTRIBUTOR_PLAN && latest?.status !== 'open'
    ? html`<form method="post" action="/settings/account/contributor" class="stack">${csrfField(request)}
<label for="honeypots">What honeypots do you run? <span class="hint">(software, how many, where; the operator reads this)</span></label><textarea id="honeypots" name="honeypots" required maxlength="${MAX_HONEYPOTS_TEXT}" rows="3"${errors.attributes('honeypots')}>${refused?.honeypots ?? ''}</textarea>${errors.note('honeypots')}
<button type="submit">Ask for the contributor plan</button>
</form>`
    : ''}
<h3>Contributors’ board</h3>
<p>${alias ? html`This account is on the <a href="/contributors">contributors’ board</a> as <strong>${alias}</strong>.` : html`This account is not named on the <a href="/contributors">contributors’ board</a>.`} Only accounts whose events join the shared data set are counted there.</p>
${owner
    ? html`<form method="post" action="/settings/account/board" class="stack">${csrfField(request)}<input type="hidden" name="join" value="yes">
<label for="alias">Public alias <span class="hint">(3 to 32 letters, digits, spaces, dots, hyphens or underscores; shown to every signed-in user)</span></label><input id="alias" name="alias" required minlength="3" maxlength="32" value="${refused?.alias ?? alias ?? ''}"${errors.attributes('alias')}>${errors.note('alias')}
<button type="submit">${alias ? 'Change alias' : 'Show this account on the board'}</button>
</form>${alias ? html`<form method="post" action="/settings/account/board">${csrfField(request)}<input type="hidden" name="join" value="no"><button type="submit">Take this account off the board</button></form>` : ''}`
    : ''}
</section>`;
}

function contributorState(plan: string, latest: ContributorRequest | undefined): Html {
  if (plan === CONTRIBUTOR_PLAN) return html`<p>This account is on the contributor plan: its nodes may submit events.</p>`;
  if (latest?.status === 'open') return html`<p>Asked for on ${toMinute(latest.created_at)} UTC; the operator has not decided yet.</p>`;
  if (latest?.status === 'declined') return html`<p>The last request was declined on ${toMinute(latest.decided_at ?? latest.created_at)} UTC: “${latest.reason ?? ''}”. You may ask again.</p>`;
  return html`<p>On the contributor plan an account’s honeypots submit events (and it gets more lookups). Tell the operator what you run.</p>`;
}

import type { FastifyReply, FastifyRequest } from 'fastify';
import { html, type Html } from './html.ts';
import { csrfOf } from './web-session.ts';

const ACCOUNT_NAV: ReadonlyArray<[string, string]> = [
  ['/overview', 'Overview'],
  ['/events', 'Events'],
  ['/nodes', 'Nodes'],
  ['/lookup', 'Lookup'],
  ['/settings/clients', 'API clients'],
  ['/settings/integrations', 'Integrations'],
  ['/settings/allowlist', 'Allowlist'],
  ['/settings/account', 'Account'],
  ['/contributors', 'Contributors'],
];
const OPERATOR_NAV: ReadonlyArray<[string, string]> = [
  ['/operator/accounts', 'Accounts'],
  ['/operator/plans', 'Plans'],
  ['/operator/allowlist', 'Allowlist'],
  ['/operator/reports', 'Reports'],
  ['/operator/contributors', 'Contributor requests'],
  ['/operator/peers', 'Peers'],
  ['/operator/audit', 'Audit trail'],
  // An operator has no account page to reach it from, as owners and members do.
  ['/settings/two-factor', 'Two-factor sign-in'],
];

/** A hidden field with this page's CSRF token: every form that posts carries one. */
export function csrfField(request: FastifyRequest): Html {
  return html`<input type="hidden" name="_csrf" value="${csrfOf(request)}">`;
}

/** Sends a whole page: the shell, the navigation for whoever is signed in, and the content. */
export function sendPage(request: FastifyRequest, reply: FastifyReply, title: string, content: Html, status = 200): FastifyReply {
  return reply.code(status).type('text/html; charset=utf-8').send(page(request, title, content).text);
}

function page(request: FastifyRequest, title: string, content: Html): Html {
  const user = request.web?.user;
  const items = !user ? [] : user.role === 'operator' ? OPERATOR_NAV : ACCOUNT_NAV;
  const path = request.url.split('?')[0] ?? '';
  const nav = items.map(([href, label]) => html`<li><a href="${href}"${path.startsWith(href) ? html` aria-current="page"` : ''}>${label}</a></li>`);
  const who = user
    ? html`<div class="who"><span>${user.email}${request.web.account ? html` · ${request.web.account.name}` : ''}</span>
<form method="post" action="/sign-out">${csrfField(request)}<button type="submit" class="link">Sign out</button></form>
<form method="post" action="/sign-out-everywhere">${csrfField(request)}<button type="submit" class="link">Sign out everywhere</button></form></div>`
    : '';
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">
<title>${title} · Tollwatch</title>
<link rel="stylesheet" href="/static/dashboard.css">
<script src="/static/dashboard.js" defer></script>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header>
<a class="brand" href="/">Tollwatch</a>
${items.length > 0 ? html`<nav aria-label="Main"><ul>${nav}</ul></nav>` : ''}
${who}
</header>
<main id="main">
<h1>${title}</h1>
${content}
</main>
</body>
</html>
`;
}

/** A short page saying what went wrong, with a way on. */
export function sendMessage(request: FastifyRequest, reply: FastifyReply, status: number, title: string, message: string): FastifyReply {
  return sendPage(request, reply, title, html`<p role="alert" class="error">${message}</p><p><a href="/">Back to the start</a></p>`, status);
}

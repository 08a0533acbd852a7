import type { FastifyInstance } from 'fastify';
import { PROBLEMS } from '../http/problem.ts';
import { securityHeaders } from '../http/security-headers.ts';
import { html } from './html.ts';

/**
 * GET /problems: the page every problem `type` points at (docs/api.md §4), one section per
 * machine code, each anchored by its code. Plain HTML with nothing to load or run, so the
 * API's own security headers serve it as they are; outside the dashboard's scope, as it needs
 * no session.
 */
export async function problemPages(app: FastifyInstance) {
  const page = renderProblemsPage();
  const headers = securityHeaders();
  app.get('/problems', { schema: { hide: true } }, async (_request, reply) =>
    reply.headers(headers).header('cache-control', 'public, max-age=3600').type('text/html; charset=utf-8').send(page),
  );
}

function renderProblemsPage(): string {
  const sections = Object.entries(PROBLEMS)
    .sort(([, a], [, b]) => a.status - b.status)
    .map(([code, kind]) => html`<section id="${code}">\n<h2>${code}: ${kind.status} ${kind.title}</h2>\n<p>${kind.meaning}</p>\n</section>\n`);
  return html`<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Tollwatch API problems</title></head>
<body>
<h1>Tollwatch API problems</h1>
<p>Every error of the API is an RFC 9457 problem document whose <code>type</code> points at one section below and whose <code>error</code> member holds the same machine code. The API reference is at <a href="/docs">/docs</a>.</p>
${sections}</body>
</html>
`.text;
}

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../support/harness.ts';

/** The policy of every page but the API docs: load nothing, be framed by nothing. */
const PAGE_POLICY = "default-src 'none'; frame-ancestors 'none'";

/** The headers every answer outside /api carries as well as inside it (docs/guarantees.md §6). */
function expectSecurityHeaders(res: Response, path: string) {
  expect(res.headers.get('x-frame-options'), path).toBe('DENY');
  expect(res.headers.get('x-content-type-options'), path).toBe('nosniff');
  expect(res.headers.get('referrer-policy'), path).toBe('no-referrer');
  const policy = res.headers.get('content-security-policy') ?? '';
  expect(policy, path).toContain("frame-ancestors 'none'");
  expect(policy, path).toMatch(/^default-src 'none'(;|$)/);
  // Nothing a script injected into a page could use.
  expect(policy, path).not.toMatch(/unsafe-|\*|https?:(?!\/\/)/);
  return policy;
}

describe('security headers on every page outside /api (docs/api.md §1)', () => {
  let h: Harness;

  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(() => h?.close());

  const get = (path: string, init: RequestInit = {}) => fetch(`${h.url}${path}`, { redirect: 'manual', ...init });

  it('every operational page and every error outside /api carries them, with the strict policy', async () => {
    const pages: Array<[string, number]> = [
      ['/healthz', 200],
      ['/readyz', 200],
      ['/.well-known/jwks.json', 200],
      ['/.well-known/oauth-authorization-server', 200],
      ['/.well-known/oauth-protected-resource', 200],
      ['/.well-known/oauth-protected-resource/api', 200],
      ['/problems', 200],
      ['/nothing-here', 404],
      ['/.well-known/nothing', 404],
      ['/%', 400],
    ];
    for (const [path, status] of pages) {
      const res = await get(path);
      expect(res.status, path).toBe(status);
      expect(expectSecurityHeaders(res, path), path).toBe(PAGE_POLICY);
    }
    const post = await get('/healthz', { method: 'POST' });
    expect(post.status).toBe(404);
    expect(expectSecurityHeaders(post, 'POST /healthz')).toBe(PAGE_POLICY);
  });

  it('the Swagger UI under /docs carries them too, with a policy that lets only its own files run', async () => {
    const docs = [
      '/docs',
      '/docs/',
      '/docs/static/index.html',
      '/docs/static/swagger-ui-bundle.js',
      '/docs/static/swagger-ui-standalone-preset.js',
      '/docs/static/swagger-initializer.js',
      '/docs/static/swagger-ui.css',
      '/docs/static/index.css',
      '/docs/static/favicon-32x32.png',
      '/docs/json',
      '/docs/yaml',
    ];
    for (const path of docs) {
      const res = await get(path);
      expect(res.status, path).toBeLessThan(400);
      const policy = expectSecurityHeaders(res, path);
      expect(policy, path).toContain("script-src 'self'");
      expect(policy, path).toContain("style-src 'self'");
      // The document is fetched from here; "Try it out" goes to the public URL.
      expect(policy, path).toContain("connect-src 'self' http://tollwatch.test");
      expect(policy, path).toContain("img-src 'self' data:");
      expect(policy, path).toContain("form-action 'none'");
    }
    // A file the UI does not have is a 404 with the headers all the same.
    const missing = await get('/docs/static/nothing.js');
    expect(missing.status).toBe(404);
    expectSecurityHeaders(missing, 'missing');
  });

  it('the /docs page needs nothing its policy refuses: no inline script, every file from this origin', async () => {
    for (const path of ['/docs', '/docs/']) {
      const html = await (await get(path)).text();
      const scripts = [...html.matchAll(/<script([^>]*)>([\s\S]*?)<\/script>/g)];
      expect(scripts.length, path).toBeGreaterThan(0);
      for (const [, attributes, body] of scripts) {
        expect(body!.trim(), path).toBe('');
        expect(attributes, path).toMatch(/src="(\.\/|\/)[^"]+"/);
      }
      expect(html, path).not.toMatch(/<style|\sstyle=|\son[a-z]+=/i);
      const links = [...html.matchAll(/<link[^>]*href="([^"]+)"/g)].map(([, href]) => href!);
      for (const href of links) expect(new URL(href, `${h.url}${path}`).origin, href).toBe(h.url);
      // Each file the page names is served, under the same policy.
      for (const href of [...links, ...scripts.map(([, attributes]) => /src="([^"]+)"/.exec(attributes!)![1]!)]) {
        const res = await fetch(new URL(href, `${h.url}${path}`));
        expect(res.status, href).toBe(200);
        expect(res.headers.get('content-security-policy'), href).toContain("script-src 'self'");
      }
    }
    // The initializer fetches the document from this origin and asks no third-party validator.
    const initializer = await (await get('/docs/static/swagger-initializer.js')).text();
    expect(initializer).toContain("resolveUrl('./json')");
    expect(initializer).toMatch(/validatorUrl: null/);
    expect(initializer).not.toMatch(/\beval\(|new Function/);
  });

  it('the API and the token endpoint keep theirs', async () => {
    for (const res of [await get('/api/openapi.json'), await get('/api/phone-numbers/100'), await get('/oauth/token', { method: 'POST' })]) {
      expect(expectSecurityHeaders(res, res.url)).toBe(PAGE_POLICY);
    }
  });
});

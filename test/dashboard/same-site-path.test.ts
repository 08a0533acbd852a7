import { describe, expect, it } from 'vitest';
import { sameSitePath } from '../../src/web/same-site-path.ts';

/**
 * The sign-in's `next` (docs/guarantees.md §12): a path on this site or `/`, judged after every
 * normalisation a browser applies, then read back as a browser reads a `Location` header.
 */
const ORIGIN = 'https://tollwatch.example';

/** What a browser does with the `Location` answered: where it goes, on a page of this site. */
const followed = (location: string) => new URL(location, `${ORIGIN}/sign-in`);

describe('sameSitePath', () => {
  const offSite = [
    // Dot segments removed after parsing leave a path that begins with `//`.
    '/.//evil.example',
    '/..//evil.example/path',
    '/%2e//evil.example',
    '/%2E%2e//evil.example',
    '/./\\evil.example',
    '/a/..//evil.example',
    '/a/b/../..//evil.example',
    '/.%2e//evil.example',
    '/././/evil.example',
    '/.\\/evil.example',
    '/%2e\\\\evil.example',
    // Backslashes, tabs and line breaks as the WHATWG parser reads them.
    '//evil.example/x',
    '/\\evil.example',
    '\\\\evil.example',
    '/\\/evil.example',
    '/\t/evil.example/',
    '/\n/evil.example/',
    '/\r\n/evil.example',
    '/\t\\evil.example',
    '/.\t//evil.example',
    '/\t.//evil.example',
    // Credentials and schemes.
    '//user@evil.example',
    '//evil.example@tollwatch.example',
    '///evil.example',
    'https://evil.example/',
    'javascript:alert(1)',
    ' /x',
    '',
  ];
  it.each(offSite)('sends %j to the default', (next) => {
    expect(sameSitePath(next)).toBe('/');
  });

  const onSite: Array<[string, string]> = [
    ['/nodes', '/nodes'],
    ['/events?sip_method=INVITE#top', '/events?sip_method=INVITE#top'],
    ['/a/../nodes', '/nodes'],
    ['/./nodes', '/nodes'],
    ['/%2e%2e/nodes', '/nodes'],
    ['/@evil.example', '/@evil.example'],
    ['/nodes?next=//evil.example', '/nodes?next=//evil.example'],
    ['/%5c%5cevil.example', '/%5c%5cevil.example'],
    ['/%2f%2fevil.example', '/%2f%2fevil.example'],
    ['/no\u000bdes', '/no%0Bdes'],
    ['/\u3002', '/%E3%80%82'],
    ['/a\nb', '/ab'],
  ];
  it.each(onSite)('keeps %j as %j', (next, path) => {
    expect(sameSitePath(next)).toBe(path);
  });

  it('answers, for every form here, a path the browser follows to this origin', () => {
    for (const next of [...offSite, ...onSite.map(([n]) => n)]) {
      const answer = sameSitePath(next);
      expect(answer, next).toMatch(/^\/(?![/\\])/);
      expect(followed(answer).origin, next).toBe(ORIGIN);
    }
  });
});

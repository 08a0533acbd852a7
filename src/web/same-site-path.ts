/** Resolves a `next` the way a browser will, to tell same-origin paths apart. */
const SELF = 'http://tollwatch.invalid';

/**
 * Where a sign-in may lead: a path on this site, as the URL parser reads it. A browser drops tabs
 * and line breaks and reads `\` as `/`, so `/\t/evil.example/` is `//evil.example/`, another
 * site; judged after parsing, it is. Parsing also removes dot segments, so `/.//evil.example`
 * comes out as `//evil.example`: a path to this parser, another host to the browser reading it
 * back from `Location`. So the answer must survive being read again as a browser reads a
 * `Location` (the same URL, on this origin), and never begins with `//`. What is answered is the
 * parsed path, percent-encoded, so that no character of `next` can break the header either.
 */
export function sameSitePath(next: string): string {
  if (!next.startsWith('/')) return '/';
  let url: URL;
  try {
    url = new URL(next, SELF);
  } catch {
    return '/';
  }
  if (url.origin !== SELF) return '/';
  const path = `${url.pathname}${url.search}${url.hash}`;
  if (path.startsWith('//')) return '/';
  const readBack = new URL(path, SELF);
  return readBack.origin === SELF && readBack.href === url.href ? path : '/';
}

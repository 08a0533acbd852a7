import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * Rules the test files keep for their own sake (docs/testing.md, "Waiting" and "Servers").
 * An `afterAll` runs even when its `beforeAll` failed, with the variables it meant to set still
 * undefined: `h.close()` then throws a TypeError that hides the real error (as it did in
 * test/alerts/slow-receivers.test.ts), so every cleanup of a resource set up later is `h?.close()`.
 */
function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    return entry.isDirectory() ? testFiles(path) : entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** The body of each `afterAll` of a file: a one-line arrow, or the lines up to its closing `});`. */
function afterAllBodies(text: string): string[] {
  const bodies: string[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const start = /^(\s*)afterAll\(/.exec(lines[i]!);
    if (!start) continue;
    if (lines[i]!.trimEnd().endsWith(');')) {
      bodies.push(lines[i]!);
      continue;
    }
    const end = lines.findIndex((line, j) => j > i && line === `${start[1]}});`);
    bodies.push(lines.slice(i, end < 0 ? undefined : end).join('\n'));
  }
  return bodies;
}

const STOPPERS = /pg_ctlcluster[^\n]*stop|redis-cli[^\n]*shutdown/;

describe('test hygiene', () => {
  const files = testFiles('test').filter((path) => path !== join('test', 'test-hygiene.test.ts'));

  it('cleans up in afterAll with optional calls, safe when beforeAll failed', () => {
    const unsafe = files.flatMap((path) =>
      afterAllBodies(readFileSync(path, 'utf8')).flatMap((body) => {
        // A loop's variable is always set; the loop over an empty list is the safe case.
        const looped = new Set([...body.matchAll(/for \(const (\w+) of/g)].map((m) => m[1]));
        return [...body.matchAll(/(?<![?.\w])(\w+)\.(close|stop|drop|remove|kill)\(/g)].filter((m) => !looped.has(m[1])).map((m) => `${path}: ${m[0]}`);
      }),
    );
    expect(unsafe).toEqual([]);
  });

  it("never stops the machine's PostgreSQL or Redis: tests that take a server away start their own", () => {
    expect(files.filter((path) => STOPPERS.test(readFileSync(path, 'utf8')))).toEqual([]);
  });
});

import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The import rules of docs/architecture.md ("The layers"), read off the code: every relative
 * import of every module under `src/`, judged by the table below. A rule the code breaks fails
 * here, naming the file and what it imports.
 */
const SRC = new URL('../src/', import.meta.url).pathname;

/** For each layer, the places of ours it may import, besides itself. Keys and values are `src/`-relative prefixes. */
const MAY_IMPORT: Record<string, string[]> = {
  'domain/': [],
  'store/': ['domain/'],
  'limits/': ['domain/'],
  'coordination/': ['domain/', 'limits/plan-limiter.ts'],
  'oauth/': ['domain/', 'limits/', 'store/schema.ts', 'store/store-errors.ts', 'metrics/metrics.ts'],
  'delivery/': ['domain/'],
  'metrics/': [],
  'dns/': ['domain/', 'metrics/metrics.ts'],
  'http/': ['domain/', 'limits/', 'metrics/metrics.ts', 'oauth/', 'services.ts', 'store/store-errors.ts'],
  'web/': ['domain/', 'limits/', 'services.ts', 'http/problem.ts', 'http/security-headers.ts', 'http/fault-class.ts'],
  'cli/': ['domain/', 'services.ts', 'config.ts', 'app.ts', 'import/event-import.ts', '../sdk/src/', '../cli/src/lookup-output.ts'],
  'aggregates/': ['domain/', 'store/aggregate-fold.ts'],
  'import/': ['domain/'],
  'assembly/': ['domain/', 'store/', 'limits/', 'coordination/', 'oauth/', 'delivery/', 'metrics/metrics.ts', 'aggregates/', 'import/', 'config.ts'],
};

/**
 * Packages the domain may use: pure code, no framework, no driver. TypeBox for the lookup
 * answers, written once as JSON Schema (domain/lookup-answers.ts) so that their types and the
 * API's documented answers are one.
 */
const DOMAIN_PACKAGES = ['node:crypto', 'ipaddr.js', 'libphonenumber-js/max', 'typebox'];

function modules(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? modules(path) : name.endsWith('.ts') ? [path] : [];
  });
}

/** Every module a file imports, statically or dynamically (`import type` included). */
function importsOf(text: string): string[] {
  return [...text.matchAll(/(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g)].map((m) => (m[1] ?? m[2])!);
}

const FILES = modules(SRC).map((path) => ({ path, name: relative(SRC, path), imports: importsOf(readFileSync(path, 'utf8')) }));

describe('the layers keep the rules docs/architecture.md states', () => {
  for (const [layer, allowed] of Object.entries(MAY_IMPORT)) {
    it(`${layer} imports only ${allowed.length ? allowed.join(', ') : 'itself'} of ours`, () => {
      const broken: string[] = [];
      for (const file of FILES.filter((f) => f.name.startsWith(layer))) {
        for (const spec of file.imports.filter((s) => s.startsWith('.'))) {
          const target = relative(SRC, join(dirname(file.path), spec));
          if (target.startsWith(layer) || allowed.some((a) => target.startsWith(a))) continue;
          broken.push(`${file.name} imports ${target}`);
        }
      }
      expect(broken).toEqual([]);
    });
  }

  it('domain/ uses no framework and no driver', () => {
    const packages = FILES.filter((f) => f.name.startsWith('domain/')).flatMap((f) => f.imports.filter((s) => !s.startsWith('.')).map((s) => `${f.name}: ${s}`));
    expect(packages.filter((p) => !DOMAIN_PACKAGES.some((allowed) => p.endsWith(`: ${allowed}`)))).toEqual([]);
  });

  it('route plugins are plain async functions, with no type provider (the schemas only document)', () => {
    const styled = FILES.filter((f) => /^(http|web)\//.test(f.name)).filter((f) => /FastifyPluginAsync|TypeProvider|withTypeProvider/.test(readFileSync(f.path, 'utf8')));
    expect(styled.map((f) => f.name)).toEqual([]);
  });

  it('metrics/metrics.ts imports nothing of ours', () => {
    expect(FILES.find((f) => f.name === 'metrics/metrics.ts')!.imports.filter((s) => s.startsWith('.'))).toEqual([]);
  });

  it('store/ branches on dialects through capability flags, never on their names', () => {
    const byName = FILES.filter((f) => f.name.startsWith('store/') && f.name !== 'store/dialect.ts').filter((f) => /caps\.name\s*[!=]==|\.caps\.name\b/.test(readFileSync(f.path, 'utf8')));
    expect(byName.map((f) => f.name)).toEqual([]);
  });
});

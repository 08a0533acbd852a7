import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { migrations } from '../../src/store/migrations/index.ts';

const FOLDER = new URL('../../src/store/migrations/', import.meta.url).pathname;
const FILES = readdirSync(FOLDER).filter((f) => f.endsWith('.ts'));
/** What a released migration may import: the query builder, Node's crypto, and its own folder. */
const ALLOWED = new Set(['kysely', 'kysely/migration', 'node:crypto']);

/** Every module a file imports, statically or dynamically. */
function importsOf(text: string): string[] {
  return [...text.matchAll(/(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g)].map((m) => (m[1] ?? m[2])!);
}

describe('migrations are frozen once released (docs/architecture.md, "The store")', () => {
  it('import nothing of today’s code: only kysely, node:crypto and files of their own folder', () => {
    for (const file of FILES) {
      for (const spec of importsOf(readFileSync(join(FOLDER, file), 'utf8'))) {
        const own = spec.startsWith('./') && !spec.slice(2).includes('/');
        expect(ALLOWED.has(spec) || own, `${file} imports ${spec}`).toBe(true);
      }
    }
  });

  it('are one file each, all of them registered, in order', () => {
    const files = FILES.filter((f) => /^\d{3}-/.test(f)).sort();
    const names = Object.keys(migrations({ accessCounter: true, counterType: 'integer', serialType: 'integer', partitionedEvents: false, withoutRowid: true, jsonObjectAgg: 'json_group_object' }));
    expect(names).toEqual([...names].sort());
    expect(names.map((n) => `${n.replace(/_/g, '-')}.ts`)).toEqual(files);
  });

  it('the check itself sees an import from outside the folder', () => {
    expect(importsOf("import { DEFAULT_PLANS } from '../../domain/plans.ts';\nconst x = await import('../partitions.ts');")).toEqual(['../../domain/plans.ts', '../partitions.ts']);
  });
});

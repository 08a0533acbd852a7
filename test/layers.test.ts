import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The table of docs/architecture.md ("The layers"), read off the code: every import of every
 * module under `src/`, `cli/src/` and `sdk/src/`, judged by the rows below, and the rules the
 * table states beside it (dialect differences as flags, one advisory-lock registry, one place
 * each for the request-validation rule and the insufficient-scope answer). A break fails here,
 * naming the file and what it does.
 */
const ROOT = new URL('../', import.meta.url).pathname;

interface Row {
  /** Places of ours it may import, besides its own: repository-relative prefixes. */
  ours: string[];
  /** Places of ours it may import types from, and nothing else (`import type`). */
  typesOf?: string[];
  /** Places of ours it may import types from, or anything by `import()` when first needed. */
  lazily?: string[];
  /** Packages it may import, exactly as imported. */
  packages: string[];
  /** The `node:` built-ins it may import; any when absent. */
  builtins?: string[];
}

/** A row for every place of the code: a file's row is the longest key that starts its path. */
const TABLE: Record<string, Row> = {
  'src/domain/': { ours: [], packages: ['ipaddr.js', 'libphonenumber-js/max', 'otpauth', 'typebox'], builtins: ['node:crypto'] },
  'src/store/': { ours: ['src/domain/'], packages: ['kysely', 'kysely/migration', 'pg', 'better-sqlite3', 'pino'] },
  'src/aggregates/': { ours: ['src/domain/'], typesOf: ['src/store/fold/aggregate-fold.ts'], packages: ['bloomfilter', 'pino'] },
  'src/import/': { ours: ['src/domain/'], packages: ['better-sqlite3'] },
  'src/limits/': { ours: ['src/domain/'], packages: ['rate-limiter-flexible'] },
  'src/coordination/': { ours: ['src/domain/', 'src/limits/plan-limiter.ts'], packages: ['ioredis', 'rate-limiter-flexible', 'pino'] },
  'src/oauth/': { ours: ['src/domain/'], packages: ['jose'] },
  'src/delivery/': { ours: ['src/domain/'], packages: ['nodemailer', 'standardwebhooks', 'pino'] },
  'src/sso/': { ours: ['src/domain/'], packages: ['openid-client'] },
  'src/metrics/': { ours: [], packages: ['prom-client'] },
  'src/dns/': { ours: ['src/domain/', 'src/metrics/metrics.ts'], packages: ['dns-packet', 'pino'] },
  'src/http/': {
    ours: ['src/domain/', 'src/limits/', 'src/metrics/metrics.ts', 'src/oauth/', 'src/store/store-errors.ts'],
    typesOf: ['src/services.ts'],
    packages: ['fastify', '@fastify/formbody', '@fastify/swagger', 'helmet', 'secure-json-parse', 'structured-headers', 'typebox'],
  },
  'src/web/': {
    ours: ['src/domain/', 'src/http/problem.ts', 'src/http/security-headers.ts', 'src/http/fault-class.ts'],
    typesOf: ['src/services.ts', 'src/limits/'],
    packages: ['fastify', '@fastify/cookie', '@fastify/formbody', 'qrcode'],
  },
  'src/assembly/': {
    ours: ['src/domain/', 'src/store/', 'src/limits/', 'src/coordination/', 'src/oauth/', 'src/delivery/', 'src/sso/', 'src/metrics/metrics.ts', 'src/aggregates/', 'src/import/', 'src/config.ts'],
    packages: ['pino'],
  },
  'src/cli/': { ours: ['src/domain/', 'src/config.ts', 'src/import/event-import.ts', 'sdk/src/'], lazily: ['src/services.ts', 'src/app.ts'], packages: ['commander'] },
  'src/types/': { ours: [], packages: [] },
  'src/app.ts': { ours: ['src/http/', 'src/web/', 'src/domain/', 'src/metrics/metrics.ts'], typesOf: ['src/services.ts'], packages: ['fastify', '@fastify/swagger', '@fastify/swagger-ui'] },
  'src/services.ts': { ours: ['src/assembly/', 'src/config.ts', 'src/domain/', 'src/metrics/metrics.ts', 'src/store/'], packages: ['pino'] },
  'src/server.ts': {
    ours: ['src/app.ts', 'src/config.ts', 'src/services.ts', 'src/logger.ts', 'src/dns/', 'src/metrics/', 'src/store/database.ts'],
    packages: ['close-with-grace', 'pino', 'rate-limiter-flexible'],
  },
  'src/config.ts': { ours: ['src/domain/', 'src/dns/dns-settings.ts', 'src/oauth/token-lifetime.ts', 'src/sso/oidc-settings.ts'], packages: ['env-schema', 'typebox'] },
  'src/logger.ts': { ours: ['src/domain/'], packages: ['pino'] },
  'src/node-flags.ts': { ours: [], packages: [] },
  'cli/src/': { ours: ['sdk/src/', ...shared()], packages: [] },
  'sdk/src/': { ours: [], packages: [], builtins: [] },
};

/**
 * What `tollwatch lookup` (src/cli/) shares with the standalone `tollwatch-cli` (cli/src/), which
 * compiles it in: the CLIs depend one way, the package on the server's sources, never the reverse.
 */
function shared(): string[] {
  return ['src/cli/terminal-text.ts', 'src/cli/api-client.ts', 'src/cli/lookup-output.ts'];
}

interface Import {
  /** A repository-relative path for a module of ours, else the package's name as written. */
  target: string;
  ours: boolean;
  typeOnly: boolean;
  /** By `import()`, when the code first runs it. */
  dynamic: boolean;
}

interface Source {
  name: string;
  text: string;
  imports: Import[];
}

function modules(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? modules(path) : name.endsWith('.ts') ? [path] : [];
  });
}

/** Every module a file imports: statically, dynamically, for effect or re-exported; `import type` told apart. */
function importsOf(path: string, text: string): Import[] {
  const found: Array<{ spec: string; typeOnly: boolean; dynamic: boolean }> = [];
  for (const m of text.matchAll(/(?:^|\n)\s*(?:import|export)\s+(type\s+)?([^'";]*?)\s*from\s+['"]([^'"]+)['"]/g)) {
    const clause = m[2]!.trim();
    const names = clause.startsWith('{') ? clause.slice(1, -1).split(',').map((n) => n.trim()).filter(Boolean) : [];
    found.push({ spec: m[3]!, typeOnly: m[1] !== undefined || (names.length > 0 && names.every((n) => n.startsWith('type '))), dynamic: false });
  }
  for (const m of text.matchAll(/(?:^|\n)\s*import\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g)) found.push({ spec: (m[1] ?? m[2])!, typeOnly: false, dynamic: m[2] !== undefined });
  return found.map(({ spec, typeOnly, dynamic }) => {
    const ours = spec.startsWith('.');
    return { target: ours ? relative(ROOT, join(dirname(path), spec)) : spec, ours, typeOnly, dynamic };
  });
}

const SOURCES: Source[] = ['src', 'cli/src', 'sdk/src'].flatMap((root) =>
  modules(join(ROOT, root)).map((path) => {
    const text = readFileSync(path, 'utf8');
    return { name: relative(ROOT, path), text, imports: importsOf(path, text) };
  }),
);

function rowOf(name: string): [string, Row] | undefined {
  const key = Object.keys(TABLE)
    .filter((k) => name.startsWith(k))
    .sort((a, b) => b.length - a.length)[0];
  return key === undefined ? undefined : [key, TABLE[key]!];
}

/** What `file` may not import under its row: each as `file imports target`. */
function breaks(file: Source): string[] {
  const [key, row] = rowOf(file.name)!;
  const within = (target: string, places: string[] = []) => places.some((p) => target.startsWith(p));
  return file.imports
    .filter((i) => {
      if (!i.ours) return i.target.startsWith('node:') ? row.builtins !== undefined && !row.builtins.includes(i.target) : !row.packages.includes(i.target);
      if (key.endsWith('/') && i.target.startsWith(key)) return false;
      return !(within(i.target, row.ours) || (i.typeOnly && within(i.target, [...(row.typesOf ?? []), ...(row.lazily ?? [])])) || (i.dynamic && within(i.target, row.lazily)));
    })
    .map((i) => `${file.name} imports ${i.typeOnly ? 'types of ' : ''}${i.target}${i.dynamic ? ' when first needed' : ''}`);
}

/** The sources other than the ones named, with the text that matches `pattern`: each as `file: match`. */
function writing(pattern: RegExp, except: string[] = []): string[] {
  return SOURCES.filter((f) => !except.includes(f.name)).flatMap((f) => [...f.text.matchAll(new RegExp(pattern.source, 'g'))].map((m) => `${f.name}: ${m[0]}`));
}

describe('the layers keep the table of docs/architecture.md', () => {
  it('every source file has a row', () => {
    expect(SOURCES.filter((f) => !rowOf(f.name)).map((f) => f.name)).toEqual([]);
    // A row naming a place that is gone would hold nothing to its rule.
    expect(Object.keys(TABLE).filter((key) => !existsSync(join(ROOT, key)))).toEqual([]);
  });

  for (const key of Object.keys(TABLE)) {
    it(`${key} imports only what its row allows`, () => {
      expect(SOURCES.filter((f) => rowOf(f.name)?.[0] === key).flatMap(breaks)).toEqual([]);
    });
  }

  it('what the standalone CLI compiles in imports only the SDK, pure domain modules and node: built-ins', () => {
    const reached = new Set<string>();
    const visit = (name: string) => {
      if (reached.has(name)) return;
      reached.add(name);
      const file = SOURCES.find((f) => f.name === name);
      if (!file) throw new Error(`${name} is imported but not read`);
      for (const i of file.imports.filter((i) => i.ours)) visit(i.target);
    };
    SOURCES.filter((f) => f.name.startsWith('cli/src/')).forEach((f) => visit(f.name));
    const outside = [...reached].filter((name) => !/^(cli\/src|sdk\/src|src\/domain)\//.test(name) && !shared().includes(name));
    const packages = [...reached].flatMap((name) => SOURCES.find((f) => f.name === name)!.imports.filter((i) => !i.ours && !i.target.startsWith('node:')).map((i) => `${name}: ${i.target}`));
    expect({ outside, packages }).toEqual({ outside: [], packages: [] });
  });

  it('metrics/metrics.ts imports nothing of ours', () => {
    expect(SOURCES.find((f) => f.name === 'src/metrics/metrics.ts')!.imports.filter((i) => i.ours)).toEqual([]);
  });

  it('route plugins are plain async functions, with no type provider (the schemas only document)', () => {
    expect(writing(/FastifyPluginAsync|TypeProvider|withTypeProvider/).filter((hit) => /^src\/(http|web)\//.test(hit))).toEqual([]);
  });
});

describe('what differs between the stores is a capability flag of store/dialect.ts', () => {
  it('no code compares a dialect name, or spells one as a string', () => {
    expect(writing(/(['"`])(sqlite|postgres|postgresql)\1|caps\.name\s*[!=]==?|[!=]==?\s*[\w.]*caps\.name\b/, ['src/store/dialect.ts'])).toEqual([]);
  });

  it('advisory locks are taken only through store/advisory-locks.ts, whose registry holds every key', () => {
    expect(writing(/pg_(try_)?advisory\w*/, ['src/store/advisory-locks.ts'])).toEqual([]);
  });
});

describe('a policy written once', () => {
  it('Fastify validates no request: one setting, in app.ts', () => {
    expect(writing(/\.setValidatorCompiler\(|\bvalidatorCompiler\s*:|\bbuildValidator\s*:/, ['src/app.ts'])).toEqual([]);
  });

  it('the insufficient-scope refusal is answered by one function (http/api/api-auth.ts)', () => {
    expect(writing(/problem\(\s*'insufficient_scope'|error="insufficient_scope", scope=\$\{/, ['src/http/api/api-auth.ts'])).toEqual([]);
  });
});

/**
 * The import circles among our modules, types included: each as its modules, in import order.
 * A circle means neither side can be read, moved or tested without the other (Tarjan's
 * strongly connected components over the imports).
 */
function importCircles(): string[][] {
  const names = new Set(SOURCES.map((f) => f.name));
  const edges = new Map(SOURCES.map((f) => [f.name, f.imports.filter((i) => i.ours && names.has(i.target)).map((i) => i.target)]));
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const circles: string[][] = [];
  const visit = (v: string) => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const w of edges.get(v)!) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const circle: string[] = [];
    for (let w = stack.pop()!; ; w = stack.pop()!) {
      onStack.delete(w);
      circle.push(w);
      if (w === v) break;
    }
    if (circle.length > 1) circles.push(circle.sort());
  };
  for (const name of names) if (!index.has(name)) visit(name);
  return circles;
}

describe('the modules form no circle', () => {
  it('no module reaches itself through its imports, type imports included', () => {
    expect(importCircles()).toEqual([]);
  });
});

// `npm run build`, and `npm pack` through prepack: dist/esm/ and dist/cjs/, each with its
// declarations. Plain JavaScript, so that it runs on every Node the package supports, and
// TypeScript through `npm exec`, so that a checkout of sdk/ alone packs without an install
// first: npm uses the copy in node_modules when one satisfies devDependencies, else fetches it.
import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';

const here = new URL('..', import.meta.url);
const pkg = JSON.parse(readFileSync(new URL('package.json', here), 'utf8'));
const tsc = ['exec', '--yes', `--package=typescript@${pkg.devDependencies.typescript}`, '--', 'tsc'];

rmSync(new URL('dist', here), { recursive: true, force: true });
for (const project of ['tsconfig.build.json', 'tsconfig.cjs.json']) {
  execFileSync('npm', [...tsc, '-p', project], { cwd: here, stdio: 'inherit' });
}
// The package is "type": "module"; this marks dist/cjs/ as CommonJS for Node and TypeScript alike.
writeFileSync(new URL('dist/cjs/package.json', here), `${JSON.stringify({ type: 'commonjs' }, null, 2)}\n`);

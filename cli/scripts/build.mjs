// `npm run build`, and `npm pack` through prepack: the CLI and the sources it imports from the
// repository (the SDK, pure domain modules, what it shares with src/cli/) compiled into dist/.
// It builds from a checkout of the whole repository, whose root install has TypeScript and
// Node's types.
import { execFileSync } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('..', import.meta.url));
const tsc = fileURLToPath(new URL('../../node_modules/typescript/bin/tsc', import.meta.url));
if (!existsSync(tsc)) {
  console.error('TypeScript not found: run `npm install` at the repository root first');
  process.exit(1);
}
rmSync(new URL('../dist', import.meta.url), { recursive: true, force: true });
execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: here, stdio: 'inherit' });

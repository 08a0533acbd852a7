import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { SERVER_NODE_FLAGS, WASM_CODE_FLAGS } from '../src/node-flags.ts';

describe('the server’s Node flags', () => {
  it('are the ones npm start passes, so benchmarks and tests run the server as operators do', () => {
    const { scripts } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { scripts: { start: string } };
    expect(scripts.start).toBe(`node ${SERVER_NODE_FLAGS.join(' ')} src/server.ts`);
  });

  it('keep WebAssembly code from being freed, in the server and in this test worker (its store threads)', () => {
    expect(SERVER_NODE_FLAGS).toEqual(expect.arrayContaining(WASM_CODE_FLAGS));
    expect(process.execArgv).toEqual(expect.arrayContaining(WASM_CODE_FLAGS));
  });
});

/**
 * V8 flags that keep WebAssembly code from being freed. Node strips TypeScript with a WebAssembly
 * module (amaro) in every isolate that loads a .ts file, so each worker thread (the SQLite
 * writer, the batch parser) compiles and later frees WebAssembly code, and Node 24.21's V8 (13.6)
 * can abort the whole process while freeing it: "Check failed: jit_page.has_value()" from
 * WasmImportWrapperCache::Free, under Runtime_TierUpWasmToJSWrapper, on a worker thread (seen
 * once in a test worker, which vitest reports only as "Worker exited unexpectedly";
 * docs/testing.md). These stop V8 compiling import wrappers, tiering functions up and collecting
 * WebAssembly code: with them `--trace-wasm-code-gc` shows nothing freed while writer threads start
 * and stop, where without it shows wrappers and code freed each time. Cost: WebAssembly runs on
 * its baseline tier (stripping types at load, undici's HTTP parser for outgoing requests); a
 * writer thread starts as fast (median of 8 starts within noise). The test workers run with them
 * too (vitest.config.ts), since they run the store's threads in-process.
 */
export const WASM_CODE_FLAGS = ['--wasm-wrapper-tiering-budget=2147483647', '--no-wasm-tier-up', '--no-wasm-code-gc'];

/**
 * The V8 flags the server runs with; `npm start` passes the same (package.json), and so do the
 * benchmark and the tests that start it as a process.
 *
 * Left alone, V8 grows the young generation under load from 16 to 64 MiB in one step, long
 * after start-up, and only gives it back much later: resident memory jumped 50 MiB in the middle
 * of a soak, though the heap in use never grew. A 16 MiB semi-space keeps the footprint steady
 * and measured no slower for lookups (same requests/s within noise).
 */
export const SERVER_NODE_FLAGS = ['--max-semi-space-size=16', ...WASM_CODE_FLAGS];

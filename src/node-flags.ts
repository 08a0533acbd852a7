/**
 * The V8 flags the server runs with; `npm start` passes the same (package.json), and so do the
 * benchmark and the tests that start it as a process.
 *
 * Left alone, V8 grows the young generation under load from 16 to 64 MiB in one step, long
 * after start-up, and only gives it back much later: resident memory jumped 50 MiB in the middle
 * of a soak, though the heap in use never grew. A 16 MiB semi-space keeps the footprint steady
 * and measured no slower for lookups (same requests/s within noise).
 */
export const SERVER_NODE_FLAGS = ['--max-semi-space-size=16'];

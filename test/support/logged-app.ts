import { Writable } from 'node:stream';
import { buildApp } from '../../src/app.ts';
import { createLogger } from '../../src/logger.ts';
import type { Harness } from './harness.ts';

/** The application with the server's own logger at `level`, over a harness's services, on a port of its own. */
export interface LoggedApp {
  url: string;
  /** Every chunk the logger wrote, in order. */
  lines: string[];
  close(): Promise<void>;
}

/** Starts a second app over `h`'s services whose log a test can read (redaction tests). */
export async function startLoggedApp(h: Harness, level: string): Promise<LoggedApp> {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      lines.push(String(chunk));
      done();
    },
  });
  const app = await buildApp(h.services, { loggerInstance: createLogger(level, sink) });
  await app.listen({ port: 0, host: '127.0.0.1' });
  return { url: `http://127.0.0.1:${(app.server.address() as { port: number }).port}`, lines, close: () => app.close() };
}

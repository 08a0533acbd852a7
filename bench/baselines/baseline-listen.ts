import type { Server } from 'node:http';

/**
 * Listens as every baseline server of the benchmark does: on PORT (any free one by default) on
 * loopback, keeping connections alive as the service does, printing its port, closing on SIGTERM.
 */
export function listenAsBaseline(server: Server): void {
  server.keepAliveTimeout = 72_000;
  server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
    const address = server.address();
    process.stdout.write(`listening ${typeof address === 'object' && address ? address.port : ''}\n`);
  });
  process.on('SIGTERM', () => server.close(() => process.exit(0)));
}

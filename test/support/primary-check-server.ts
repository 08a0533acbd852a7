import { createServer } from 'node:http';
import { PrimaryCheck } from './primary-check.ts';

/**
 * The proxy's health checks (primary-proxy.ts), in a process of their own: `node
 * primary-check-server.ts PORT...` answers on one HTTP port per PostgreSQL port given, 200 where
 * that node is the primary, and prints the HTTP ports as a JSON array on one line. In the test's
 * own process a synchronous call (a CLI run, a pg_ctl) held the checks past HAProxy's timeout,
 * and HAProxy marked a healthy primary down.
 */
const ports: number[] = [];
for (const nodePort of process.argv.slice(2).map(Number)) {
  const check = new PrimaryCheck(nodePort);
  const server = createServer((_, res) => {
    void check.isPrimary().then((primary) => res.writeHead(primary ? 200 : 503).end(primary ? 'primary' : 'not the primary'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  ports.push((server.address() as { port: number }).port);
}
process.stdout.write(`${JSON.stringify(ports)}\n`);

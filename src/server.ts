import cluster, { type Worker } from 'node:cluster';
import closeWithGrace from 'close-with-grace';
import type { Logger } from 'pino';
import { RateLimiterClusterMaster } from 'rate-limiter-flexible';
import { buildApp } from './app.ts';
import { loadConfig, type Config } from './config.ts';
import { startDnsServer, type DnsServer } from './dns/dns-server.ts';
import { createLogger } from './logger.ts';
import { answerClusterScrapes } from './metrics/cluster-metrics.ts';
import { PrometheusMetrics } from './metrics/prometheus-metrics.ts';
import { createServices } from './services.ts';
import { openDatabase } from './store/database.ts';

/** From the primary to the one worker that runs store maintenance. */
const MAINTAIN = 'tollwatch:maintain';
/** From a worker to the primary once it listens. */
const SERVING = 'tollwatch:serving';

/**
 * The process entry: configuration, logger, listen, graceful shutdown. With WORKERS=n the
 * primary forks n workers sharing one port (node:cluster) and replaces any that die.
 */
async function serve(config: Config, log: Logger) {
  // Metrics belong to the serving process: the CLI, on the same services, collects none.
  const metrics = config.metrics ? new PrometheusMetrics() : undefined;
  const services = await createServices(config, { log, metrics });
  const app = await buildApp(services, { loggerInstance: log });
  // One maintenance runner per deployment is enough (on PostgreSQL a lock also guards it): a
  // single process runs it; under WORKERS the primary names the one worker that does.
  const maintenance = services.storeMaintenance;
  let dns: DnsServer | undefined;

  closeWithGrace({ delay: 10_000 }, async ({ signal, err }) => {
    if (err) log.error({ err }, 'shutting down after an error');
    else log.info({ signal }, 'shutting down');
    maintenance.stop();
    await dns?.close();
    await app.close();
    // Stops the fold's turns (what is not folded yet is folded by the next start).
    await services.close();
  });

  await app.listen({ port: config.port, host: config.host });
  // Off unless TOLLWATCH_DNS_LISTEN is set (docs/dns.md); under WORKERS each worker answers on the shared sockets.
  if (config.dns.listen) dns = await startDnsServer({ zones: services.dnsZones, settings: config.dns, listen: config.dns.listen, metrics: services.metrics, log });
  services.aggregateFolder.start();
  if (cluster.isWorker) {
    process.on('message', (message) => {
      if (message === MAINTAIN) maintenance.start();
    });
    process.send?.(SERVING);
  } else {
    maintenance.start();
  }
  log.info(
    { audiences: config.audiences, issuer: config.issuer, store: services.database.caps.name, redis: Boolean(config.redisUrl) },
    `Tollwatch is serving ${config.publicUrl}`,
  );
}

async function supervise(config: Config, log: Logger) {
  // Migrate once here, so the workers do not race each other for it.
  await (await openDatabase(config.databaseUrl)).close();
  // Without Redis the primary keeps the rate-limit counters for all its workers.
  if (!config.redisUrl) new RateLimiterClusterMaster();
  let stopping = false;
  // One worker runs store maintenance. When it dies, another serving worker takes over, or
  // else the next one to start serving (worker ids are never reused, so no id can be fixed).
  const serving = new Set<Worker>();
  let maintainer: Worker | undefined;
  const appoint = () => {
    if (maintainer || stopping) return;
    // Workers killed together are not all reported dead at once: skip any already gone.
    maintainer = [...serving].find((w) => w.isConnected() && !w.isDead());
    // A worker dying as it is told fails the send; its exit appoints the next one. (Without
    // a callback, that failure would be an 'error' event and bring the primary down.)
    maintainer?.send(MAINTAIN, () => {});
  };
  cluster.on('fork', (worker) => worker.on('error', (err) => log.warn({ err, worker: worker.id }, 'lost touch with a worker')));
  cluster.on('message', (worker, message) => {
    if (message !== SERVING) return;
    serving.add(worker);
    appoint();
  });
  // A scrape reaches one worker; the primary sums every serving worker's metrics for it.
  if (config.metrics) answerClusterScrapes(() => serving);
  for (let i = 0; i < config.workers; i++) cluster.fork();
  cluster.on('exit', (worker, code, signal) => {
    serving.delete(worker);
    if (worker === maintainer) {
      maintainer = undefined;
      appoint();
    }
    if (stopping) return;
    log.error({ worker: worker.id, code, signal }, 'worker died; starting another');
    cluster.fork();
  });
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => {
      stopping = true;
      for (const worker of Object.values(cluster.workers ?? {})) worker?.kill(signal);
      setTimeout(() => process.exit(0), 11_000).unref();
      cluster.on('exit', () => {
        if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(0);
      });
    });
  }
  log.info({ workers: config.workers }, 'supervising workers');
}

try {
  const config = loadConfig();
  const log = createLogger(config.logLevel);
  if (config.workers > 1 && cluster.isPrimary) await supervise(config, log);
  else await serve(config, log);
} catch (err) {
  console.error(`tollwatch: failed to start: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
}

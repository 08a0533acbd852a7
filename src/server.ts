import closeWithGrace from 'close-with-grace';
import { pino } from 'pino';
import { buildApp } from './app.ts';
import { loadConfig } from './config.ts';
import { createServices } from './services.ts';

/** The process entry: configuration, logger, listen, graceful shutdown. */
async function main() {
  const config = loadConfig();
  const log = pino({ level: config.logLevel, redact: ['req.headers.authorization', 'req.headers.cookie'] });
  const services = await createServices(config, { log });
  const app = await buildApp(services, { loggerInstance: log });

  closeWithGrace({ delay: 10_000 }, async ({ signal, err }) => {
    if (err) app.log.error({ err }, 'shutting down after an error');
    else app.log.info({ signal }, 'shutting down');
    await app.close();
    await services.close();
  });

  await app.listen({ port: config.port, host: config.host });
  app.log.info(
    { audiences: config.audiences, issuer: config.issuer, store: services.database.caps.name },
    `Tollwatch is serving ${config.publicUrl}`,
  );
}

main().catch((err: unknown) => {
  console.error(`tollwatch: failed to start: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});

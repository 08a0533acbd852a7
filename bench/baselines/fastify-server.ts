import Fastify from 'fastify';

// What Fastify 5 itself costs: the lookup's route pattern, the bare server's fixed JSON body, no hooks.
const body = { phone_number: '+46812118532', found: false, message: 'baseline' };
const app = Fastify({ logger: false, keepAliveTimeout: 72_000 });
app.get('/api/phone-numbers/:n', async () => body);
await app.listen({ port: Number(process.env.PORT ?? 0), host: '127.0.0.1' });
process.stdout.write(`listening ${app.server.address() && typeof app.server.address() === 'object' ? (app.server.address() as { port: number }).port : ''}\n`);
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));

// The footprint baseline (bench/scenarios/footprint.ts): a bare fastify app in plain node, as
// `regbridge serve` runs from dist/ in plain node; one JSON route and /health, nothing else.
// Prints the line `regbridge serve` prints, so the scenario reads the port the same way.
import Fastify from 'fastify';

const app = Fastify({ logger: false });
app.get('/health', async () => ({ status: 'ok' }));
app.post('/api/vendor-script', async (_request, reply) => reply.code(202).send({ id: 1, status: 'RUNNING' }));
await app.listen({ port: 0, host: '127.0.0.1' });
console.log(`bare fastify listening on http://127.0.0.1:${app.server.address().port}`);
process.on('SIGTERM', () => {
  void app.close().then(() => process.exit(0));
});

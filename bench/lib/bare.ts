/** The REST throughput baseline: a bare fastify app answering a JSON POST with a constant. */
import Fastify, { type FastifyInstance } from 'fastify';

export async function startBareApp(): Promise<{ app: FastifyInstance; port: number }> {
  const app = Fastify({ logger: false });
  app.post('/api/vendor-script', async (_request, reply) =>
    reply.code(202).send({ id: 1, status: 'RUNNING' }),
  );
  await app.listen({ port: 0, host: '127.0.0.1' });
  return { app, port: (app.server.address() as { port: number }).port };
}

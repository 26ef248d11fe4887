/**
 * The REST API's HTTP metrics as fastify hooks. Each route gets its own onResponse hook with its
 * pattern fixed when it is registered, rather than one app-wide hook reading
 * `request.routeOptions`, which builds a fresh object on every read.
 */
import type { FastifyInstance, onResponseHookHandler } from 'fastify';
import type { HttpMetrics } from './metrics.ts';

/** Call before any route is registered: routes added earlier are not observed. */
export function observeHttpRequests(app: FastifyInstance, metrics: HttpMetrics): void {
  app.addHook('onRoute', (routeOptions) => {
    // The route pattern, never the raw URL, so label cardinality stays bounded.
    const route = routeOptions.url;
    // Callback style, not async: this runs for every request, and an async hook costs a promise.
    const observe: onResponseHookHandler = (request, reply, done) => {
      metrics.observe(request.method, route, reply.statusCode, reply.elapsedTime / 1000);
      done();
    };
    const own = routeOptions.onResponse;
    routeOptions.onResponse = own === undefined ? [observe] : [...[own].flat(), observe];
  });
  // Requests that matched no route (the not-found handler) are counted here.
  app.addHook('onResponse', (request, reply, done) => {
    if (request.is404)
      metrics.observe(request.method, 'unmatched', reply.statusCode, reply.elapsedTime / 1000);
    done();
  });
}

/**
 * Request bodies are JSON in UTF-8 (docs/api.md). fastify's own JSON parser decodes the
 * bytes leniently, turning invalid UTF-8 into U+FFFD, so a script could run as something other
 * than what was sent. This parser reads the bytes, refuses invalid UTF-8 with the engine's rule
 * (src/tasks/script-text.ts: 400 INVALID_REQUEST, as the MQTT side refuses such a payload), then
 * hands the text to fastify's parser (empty body, prototype poisoning and syntax errors as before).
 */
import type { FastifyInstance } from 'fastify';
import { decodeUtf8 } from '../tasks/script-text.ts';

export function installJsonBodyParser(app: FastifyInstance): void {
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    // DELETE carries no body; many HTTP clients still send `Content-Type: application/json` with
    // every request, and an empty body there is no error.
    if (request.method === 'DELETE' && (body as Buffer).length === 0) {
      done(null, undefined);
      return;
    }
    let text: string;
    try {
      text = decodeUtf8(body as Buffer, 'Body');
    } catch (error) {
      done(error as Error, undefined);
      return;
    }
    // fastify's parser is synchronous: it calls done() before returning.
    void parseJson(request, text, done);
  });
}

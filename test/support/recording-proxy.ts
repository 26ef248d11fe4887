/**
 * A pass-through HTTP proxy on a free loopback port that records every request (method, path,
 * headers, body) on its way to a real server, so a test can assert what a client put on the wire
 * when the client is not JavaScript (e.g. the Java client in a child JVM).
 */
import { createServer, type IncomingHttpHeaders, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** The status the server answered. */
  status: number;
}

export interface RecordingProxy {
  readonly port: number;
  readonly requests: RecordedRequest[];
  close(): Promise<void>;
}

export async function startRecordingProxy(
  targetPort: number,
  targetHost = '127.0.0.1',
): Promise<RecordingProxy> {
  const requests: RecordedRequest[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const upstream = request(
        { host: targetHost, port: targetPort, method: req.method, path: req.url, headers: req.headers },
        (answer) => {
          requests.push({
            method: req.method ?? '',
            path: req.url ?? '',
            headers: req.headers,
            body: body.toString('utf8'),
            status: answer.statusCode ?? 0,
          });
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      upstream.on('error', (error) => {
        res.writeHead(502, { 'content-type': 'text/plain' });
        res.end(`proxy: ${error.message}`);
      });
      upstream.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    requests,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}

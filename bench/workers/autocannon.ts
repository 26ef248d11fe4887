/**
 * Load generator process for the REST throughput scenario: runs autocannon against the URL it is
 * sent, so the client's CPU is not taken from the server under test. Message in:
 * `{type: 'run', url, method, headers, body, connections, durationS, amount?}`; out: `{type: 'result', ...}`.
 */
import autocannon from 'autocannon';
import type { WorkerMessage } from '../lib/proc.ts';
import { sendToParent, workerMain } from '../lib/worker-side.ts';

interface RunRequest extends WorkerMessage {
  type: 'run';
  url: string;
  method: 'POST' | 'GET';
  headers: Record<string, string>;
  body?: string;
  connections: number;
  durationS: number;
  /** A fixed number of requests instead of a duration. */
  amount?: number;
}

async function run(request: RunRequest): Promise<void> {
  const result = await autocannon({
    url: request.url,
    method: request.method,
    headers: request.headers,
    ...(request.body !== undefined && { body: request.body }),
    connections: request.connections,
    duration: request.durationS,
    ...(request.amount !== undefined && { amount: request.amount }),
    timeout: 10,
  });
  sendToParent({
    type: 'result',
    requestsPerSecond: result.requests.average,
    total: result.requests.total,
    ok2xx: result['2xx'],
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    latencyP50: result.latency.p50,
    latencyP99: result.latency.p99,
    durationS: result.duration,
  });
}

workerMain(
  async () => {
    sendToParent({ type: 'ready' });
  },
  {
    onMessage: async (message) => {
      if (message.type === 'run') await run(message as RunRequest);
    },
  },
);

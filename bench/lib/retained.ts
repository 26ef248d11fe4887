/**
 * Counts the retained messages a broker holds under a filter: a fresh client subscribes and
 * counts the messages that arrive with the retain flag until none came for `quietMs`.
 */
import { connect } from 'mqtt';

export async function countRetained(options: {
  url: string;
  username?: string;
  password?: string;
  filter: string;
  quietMs?: number;
}): Promise<{ total: number; byKind: Record<string, number> }> {
  const client = connect(options.url, {
    ...(options.username !== undefined && { username: options.username }),
    ...(options.password !== undefined && { password: options.password }),
    protocolVersion: 4,
    clean: true,
    reconnectPeriod: 0,
    clientId: `bench-retained-${process.pid}-${Date.now()}`,
  });
  try {
    await new Promise<void>((resolve, reject) => {
      client.once('connect', () => resolve());
      client.once('error', reject);
    });
    const byKind: Record<string, number> = {};
    let total = 0;
    let last = Date.now();
    client.on('message', (topic, _payload, packet) => {
      if (!packet.retain) return;
      total += 1;
      last = Date.now();
      const kind = topic.endsWith('/state') ? 'state' : topic.endsWith('/status') ? 'task status' : 'other';
      byKind[kind] = (byKind[kind] ?? 0) + 1;
    });
    await client.subscribeAsync(options.filter, { qos: 1 });
    last = Date.now();
    const quiet = options.quietMs ?? 300;
    while (Date.now() - last < quiet) await new Promise((r) => setTimeout(r, 25));
    return { total, byKind };
  } finally {
    await client.endAsync(true);
  }
}

/**
 * Resolves once `topic` holds (or receives) a message whose JSON `status` is `status`: a fresh
 * client subscribes and waits. Used as a barrier: a device publishes in order, so when its
 * status for a task submitted last has reached the broker, everything it published before has.
 */
export async function awaitStatusOnBroker(options: {
  url: string;
  username?: string;
  password?: string;
  topic: string;
  status: string;
  timeoutMs: number;
}): Promise<void> {
  const client = connect(options.url, {
    ...(options.username !== undefined && { username: options.username }),
    ...(options.password !== undefined && { password: options.password }),
    protocolVersion: 4,
    clean: true,
    reconnectPeriod: 0,
    clientId: `bench-barrier-${process.pid}-${Date.now()}`,
  });
  let timer: NodeJS.Timeout | undefined;
  try {
    await new Promise<void>((resolve, reject) => {
      timer = setTimeout(
        () => reject(new Error(`${options.topic}: no ${options.status} within ${options.timeoutMs} ms`)),
        options.timeoutMs,
      );
      client.once('error', reject);
      client.on('message', (_topic, payload) => {
        if (payload.length === 0) return;
        const message = JSON.parse(payload.toString('utf8')) as { status?: string };
        if (message.status === options.status) resolve();
      });
      client.once('connect', () => {
        client.subscribe(options.topic, { qos: 1 }, (error) => {
          if (error) reject(error);
        });
      });
    });
  } finally {
    clearTimeout(timer);
    await client.endAsync(true);
  }
}

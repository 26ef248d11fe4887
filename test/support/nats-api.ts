/**
 * One request to nats-server's JetStream API over the plain NATS protocol (no client library is
 * installed, and the `nats` CLI may not be either): connect, subscribe to an inbox, publish the
 * request with that inbox as reply subject, read the one answer. Used to create the MQTT
 * gateway's message stream before any MQTT client connects (docs/topology.md, "nats-server at
 * scale"): the gateway takes a `$MQTT_msgs` stream that already exists as it is.
 */
import net from 'node:net';

/** The answer of a JetStream API request: its JSON, with `error` when nats-server refused it. */
export interface JetStreamAnswer {
  error?: { code: number; err_code?: number; description?: string };
  [key: string]: unknown;
}

export function jetStreamRequest(
  port: number,
  subject: string,
  body: unknown,
  timeoutMs = 10_000,
): Promise<JetStreamAnswer> {
  const inbox = `_INBOX.regbridge.${process.pid}.${Date.now()}`;
  const payload = Buffer.from(JSON.stringify(body));
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    let buffer = Buffer.alloc(0);
    let sent = false;
    const fail = (error: Error): void => {
      socket.destroy();
      reject(error);
    };
    const timer = setTimeout(
      () => fail(new Error(`no answer to ${subject} within ${timeoutMs} ms`)),
      timeoutMs,
    );
    socket.on('error', (error) => {
      clearTimeout(timer);
      fail(error);
    });
    socket.on('data', (chunk) => {
      buffer = Buffer.concat([buffer, chunk]);
      for (;;) {
        const end = buffer.indexOf('\r\n');
        if (end < 0) return;
        const line = buffer.subarray(0, end).toString();
        if (line.startsWith('MSG ')) {
          // MSG <subject> <sid> [reply] <bytes>: the payload follows the line.
          const size = Number(line.split(' ').pop());
          if (buffer.length < end + 2 + size + 2) return;
          const answer = buffer.subarray(end + 2, end + 2 + size).toString();
          clearTimeout(timer);
          socket.end();
          try {
            resolve(JSON.parse(answer) as JetStreamAnswer);
          } catch {
            reject(new Error(`${subject}: not JSON: ${answer.slice(0, 200)}`));
          }
          return;
        }
        buffer = buffer.subarray(end + 2);
        if (line.startsWith('-ERR')) {
          clearTimeout(timer);
          fail(new Error(`${subject}: nats-server said ${line}`));
          return;
        }
        if (line === 'PING') socket.write('PONG\r\n');
        else if (line.startsWith('INFO ') && !sent) {
          sent = true;
          socket.write(
            `CONNECT {"verbose":false,"pedantic":false,"headers":false}\r\nSUB ${inbox} 1\r\n` +
              `PUB ${subject} ${inbox} ${payload.length}\r\n`,
          );
          socket.write(Buffer.concat([payload, Buffer.from('\r\n')]));
        }
      }
    });
  });
}

/**
 * Creates the MQTT gateway's `$MQTT_msgs` stream (what nats-server 2.9 would create on the first
 * MQTT connection, `$MQTT.msgs.>`) with limits retention and a maximum age instead of interest
 * retention: with interest retention nats-server checks every stored QoS 1 message, and every
 * acknowledgement, against each consumer's filter in turn, one consumer per QoS 1 subscription
 * of every session, so a fan-out's cost grows with registers x registers. Must run before any
 * MQTT client connects.
 */
export async function createMqttMessageStream(
  port: number,
  options: { maxAgeSeconds: number; storage: 'file' | 'memory'; maxBytes?: number; replicas?: number },
): Promise<void> {
  const answer = await jetStreamRequest(port, '$JS.API.STREAM.CREATE.$MQTT_msgs', {
    name: '$MQTT_msgs',
    subjects: ['$MQTT.msgs.>'],
    retention: 'limits',
    storage: options.storage,
    num_replicas: options.replicas ?? 1,
    max_age: options.maxAgeSeconds * 1e9,
    max_bytes: options.maxBytes ?? -1,
    discard: 'old',
  });
  if (answer.error) throw new Error(`creating $MQTT_msgs: ${answer.error.description ?? answer.error.code}`);
}

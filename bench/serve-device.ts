/**
 * A device for profiling by hand: `node --cpu-prof --cpu-prof-dir=/tmp/prof bin/run-ts.js
 * bench/serve-device.ts '{"mqtt": false, "maxQueue": 10000000}'`, then load it (autocannon,
 * a controller) and stop it with Ctrl-C or SIGTERM; the profile is written on exit. Read it with
 * `node bin/run-ts.js bench/profile-top.ts /tmp/prof/*.cpuprofile`. The JSON argument is a serve
 * config (src/config.ts); it defaults to loopback, free ports, user bench:bench-password-1.
 * `bench/serve-device.ts bare` serves the bare fastify baseline instead.
 */
import { startBareApp } from './lib/bare.ts';
import { startBenchDevice } from './lib/device.ts';

let close: () => Promise<void>;
if (process.argv[2] === 'bare') {
  const { app, port } = await startBareApp();
  console.log(JSON.stringify({ httpPort: port, bare: true }));
  close = () => app.close();
} else {
  const { pauseQueue, ...config } = JSON.parse(process.argv[2] ?? '{}') as Record<string, unknown>;
  const device = await startBenchDevice(config);
  // `"pauseQueue": true` keeps submitted tasks queued: the submission path alone, no execution.
  if (pauseQueue === true) await device.queue.stop();
  console.log(
    JSON.stringify({
      httpPort: device.httpPort,
      brokerPort: device.brokerPort,
      deviceId: device.config.deviceId,
    }),
  );
  close = () => device.stop();
}
let stopping = false;
const stop = async (): Promise<void> => {
  if (stopping) return;
  stopping = true;
  await close();
  process.exit(0);
};
process.on('SIGINT', () => void stop());
process.on('SIGTERM', () => void stop());

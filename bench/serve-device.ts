/**
 * A device for profiling by hand: `node --cpu-prof --cpu-prof-dir=/tmp/prof bin/run-ts.js
 * bench/serve-device.ts '{"mqtt": false, "maxQueue": 10000000}'`, then load it (autocannon,
 * a controller) and stop it with Ctrl-C or SIGTERM; the profile is written on exit. Read it with
 * `node bin/run-ts.js bench/profile-top.ts /tmp/prof/*.cpuprofile`. The JSON argument is a serve
 * config (src/config.ts); it defaults to loopback, free ports, user bench:bench-password-1.
 */
import { startBenchDevice } from './lib/device.ts';

const device = await startBenchDevice(JSON.parse(process.argv[2] ?? '{}'));
console.log(
  JSON.stringify({ httpPort: device.httpPort, brokerPort: device.brokerPort, deviceId: device.config.deviceId }),
);
let stopping = false;
const stop = async (): Promise<void> => {
  if (stopping) return;
  stopping = true;
  await device.stop();
  process.exit(0);
};
process.on('SIGINT', () => void stop());
process.on('SIGTERM', () => void stop());

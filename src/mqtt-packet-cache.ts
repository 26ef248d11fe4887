/**
 * Switches off mqtt-packet's documented packet-id cache (`writeToStream.cacheNumbers`), 65,536
 * Buffers in every process that speaks MQTT (docs/decisions/mqtt-packet-cache-off.md). Called
 * before the first packet is written, on the copy mqtt.js and aedes actually use.
 */
import { createRequire } from 'node:module';

interface MqttPacketModule {
  writeToStream: { cacheNumbers: boolean };
}

let done = false;

export function disableMqttPacketNumberCache(): void {
  if (done) return;
  done = true;
  const require = createRequire(import.meta.url);
  for (const owner of ['mqtt', 'aedes']) {
    try {
      const packet = createRequire(require.resolve(owner))('mqtt-packet') as MqttPacketModule;
      packet.writeToStream.cacheNumbers = false;
    } catch {
      // That package is not installed (a client-only consumer has no aedes): nothing to switch off.
    }
  }
}

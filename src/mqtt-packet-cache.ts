/**
 * mqtt-packet, the MQTT codec of both mqtt.js (the bridge, the controller) and aedes (the
 * broker), builds a 2-byte Buffer for every one of the 65,536 packet ids the first time it writes
 * a packet, and keeps them: 65,536 Buffer objects, 6 MiB of heap in every process that speaks
 * MQTT, a third of an idle device's heap (docs/benchmarks.md, "Issue 14", point 2). Without the cache it
 * allocates the 2 bytes when it writes a packet id, which costs nothing measurable next to the
 * packet itself. Called before the first packet is written (the broker's and the bridge's
 * constructors); mqtt-packet is reached through the packages that depend on it, so the copy they
 * use is the one switched off.
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

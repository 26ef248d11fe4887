/**
 * Switches off mqtt-packet's packet-id cache (its documented `writeToStream.cacheNumbers`): the
 * codec of both mqtt.js and aedes otherwise keeps a 2-byte Buffer for each of the 65,536 packet
 * ids in every process that speaks MQTT, a large part of an idle device's heap
 * (docs/decisions/mqtt-packet-cache-off.md). Called before the first packet is written (the
 * broker's, the bridge's and the controller's constructors); mqtt-packet is reached through the
 * packages that depend on it, so the copy they use is the one switched off.
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

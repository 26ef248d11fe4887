import { describe, expect, it } from 'vitest';
import { deviceClientOptions } from '../bridge/broker-session.ts';
import { parseBrokerUrls } from '../bridge/contract/broker-url.ts';
import { mqttLogOption } from '../bridge/contract/mqtt-log.ts';

describe('mqtt.js log option (docs/benchmarks.md, "Fan-out at scale")', () => {
  it('is a no-op unless DEBUG asks for mqtt.js', () => {
    expect(typeof mqttLogOption({}).log).toBe('function');
    expect(typeof mqttLogOption({ DEBUG: 'express:*' }).log).toBe('function');
    expect(mqttLogOption({ DEBUG: 'mqttjs*' })).toEqual({});
    expect(mqttLogOption({ DEBUG: 'mqttjs:client' })).toEqual({});
    expect(mqttLogOption({ DEBUG: '*' })).toEqual({});
    expect(mqttLogOption({ DEBUG: 'other, *' })).toEqual({});
  });

  it('device clients get it', () => {
    const [endpoint] = parseBrokerUrls('mqtt://127.0.0.1:1883', {});
    const options = deviceClientOptions({
      ns: 'pos',
      deviceId: 'reg1',
      bootId: 'b1',
      protocolVersion: 4,
      endpoint: endpoint!,
    });
    // Whatever DEBUG the suite runs with: the device's options follow mqttLogOption.
    expect(Object.hasOwn(options, 'log')).toBe(Object.hasOwn(mqttLogOption(), 'log'));
  });
});

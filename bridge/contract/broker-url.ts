/**
 * Broker URLs may carry credentials (`mqtt://NAME:PASSWORD@host:port`, README "Command line").
 * They are split off here, once: the URL without them is what logs and /health show.
 * `--mqtt-url` may also list several brokers (`mqtt://h1:1883,mqtt://h2:1883`): instances of one
 * cluster that the bridge and the controller fail over between (bridge/contract/failover.ts).
 */
import * as z from 'zod';

export interface BrokerEndpoint {
  /** The URL without user info. */
  url: string;
  username?: string;
  password?: string;
}

const PROTOCOLS = new Set(['mqtt:', 'mqtts:', 'tcp:', 'ssl:', 'ws:', 'wss:']);

/**
 * A list separator is a comma that starts another URL (`,mqtt://`, `, wss://`): a comma inside a
 * password (legal in a URL's user info) does not split it.
 */
const LIST_SEPARATOR = /\s*,\s*(?=[A-Za-z][A-Za-z0-9+.-]*:\/\/)/;

/** The URLs of a `--mqtt-url` value: one URL, a comma-separated list, or an array of either. */
export function splitBrokerUrls(raw: string | readonly string[]): string[] {
  const parts = typeof raw === 'string' ? [raw] : [...raw];
  return parts
    .flatMap((part) => part.replace(/^[\s,]+|[\s,]+$/g, '').split(LIST_SEPARATOR))
    .filter((url) => url.length > 0);
}

export function parseBrokerUrl(
  raw: string,
  override: { username?: string; password?: string } = {},
): BrokerEndpoint {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    // The raw text may hold a password: never echo it.
    throw new Error('invalid MQTT broker URL (expected mqtt://host:port, mqtts://, ws:// or wss://)');
  }
  if (!PROTOCOLS.has(url.protocol)) {
    throw new Error(
      `unsupported MQTT broker URL protocol ${url.protocol} (expected mqtt:, mqtts:, ws: or wss:)`,
    );
  }
  if (url.hostname === '') throw new Error('invalid MQTT broker URL: no host');
  const username = override.username ?? (url.username ? decodeURIComponent(url.username) : undefined);
  const password = override.password ?? (url.password ? decodeURIComponent(url.password) : undefined);
  url.username = '';
  url.password = '';
  // new URL('mqtt://h:1').toString() keeps no trailing slash for non-special schemes; ws adds one.
  const endpoint: BrokerEndpoint = { url: url.toString() };
  if (username !== undefined) endpoint.username = username;
  if (password !== undefined) endpoint.password = password;
  return endpoint;
}

/**
 * Every broker of a list, in order. A URL without credentials uses those of the first URL that
 * has some (instances of one cluster share their users, docs/broker.md), so they need writing
 * once; a URL with its own keeps them. `override` (`--user`, the `username`/`password` options)
 * applies to all. Errors name the URL's position, never its text (it may hold a password).
 */
export function parseBrokerUrls(
  raw: string | readonly string[],
  override: { username?: string; password?: string } = {},
): BrokerEndpoint[] {
  const urls = splitBrokerUrls(raw);
  if (urls.length === 0) throw new Error('no MQTT broker URL given');
  const endpoints = urls.map((url, index) => {
    try {
      return parseBrokerUrl(url, override);
    } catch (error) {
      if (urls.length === 1) throw error;
      throw new Error(`URL ${index + 1} of ${urls.length}: ${(error as Error).message}`);
    }
  });
  const withCredentials = endpoints.find((e) => e.username !== undefined);
  if (!withCredentials) return endpoints;
  return endpoints.map((e) =>
    e.username !== undefined
      ? e
      : {
          url: e.url,
          username: withCredentials.username,
          ...(withCredentials.password !== undefined && { password: withCredentials.password }),
        },
  );
}

/** For log lines about arbitrary URLs or lists of them (best effort, never throws). */
export function redactUrl(raw: string | readonly string[]): string {
  try {
    return parseBrokerUrls(raw)
      .map((endpoint) => endpoint.url)
      .join(',');
  } catch {
    return '[invalid url]';
  }
}

/**
 * `--mqtt-url`: one broker URL, or a comma-separated list of the instances of one cluster to fail
 * over between (`mqtt://h1:1883,mqtt://h2:1883`; bridge/contract/failover.ts). Each URL is checked; the
 * value is kept as given (the bridge and the controller split it). Messages never echo a URL:
 * it may hold a password.
 */
export function mqttUrlSchema(requiredMessage = 'required: a broker URL such as mqtt://host:1883') {
  return z
    .string({
      error: (issue) => (issue.input === undefined ? requiredMessage : 'expected a broker URL (text)'),
    })
    .superRefine((value, ctx) => {
      try {
        parseBrokerUrls(value);
      } catch (error) {
        ctx.addIssue({ code: 'custom', message: (error as Error).message });
      }
    });
}

/**
 * Broker URLs may carry credentials (`mqtt://NAME:PASSWORD@host:port`, contract section 4).
 * They are split off here, once: the URL without them is what logs and /health show.
 */
export interface BrokerEndpoint {
  /** The URL without user info. */
  url: string;
  username?: string;
  password?: string;
}

const PROTOCOLS = new Set(['mqtt:', 'mqtts:', 'tcp:', 'ssl:', 'ws:', 'wss:']);

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

/** For log lines about arbitrary URLs (best effort, never throws). */
export function redactUrl(raw: string): string {
  try {
    return parseBrokerUrl(raw).url;
  } catch {
    return '[invalid url]';
  }
}

/** Names and credentials shared by the fan-out scenarios, their broker workers and device hosts. */
import type { BrokerUser } from '../../broker/store-broker.ts';

export const NS = 'pos';
export const CONTROLLER_USER = 'ctl';
export const CONTROLLER_PASSWORD = 'ctl-password-1';
export const DEVICE_PASSWORD = 'device-password-1';

/** A short script, like printing one line on a receipt: the same for every controller. */
export const FANOUT_SCRIPT = 'SLEEP 50\nPRINT receipt line';

export const deviceId = (index: number): string => `r${index}`;

/** Broker users: one controller and a device user (name = device id) for each of `count` registers. */
export function fleetUsers(count: number): BrokerUser[] {
  const users: BrokerUser[] = [{ name: CONTROLLER_USER, password: CONTROLLER_PASSWORD, role: 'controller' }];
  for (let i = 0; i < count; i += 1)
    users.push({ name: deviceId(i), password: DEVICE_PASSWORD, role: 'device' });
  return users;
}

/** mqtt://user:password@host:port */
export function urlWithCredentials(host: string, port: number, user: string, password: string): string {
  return `mqtt://${encodeURIComponent(user)}:${encodeURIComponent(password)}@${host}:${port}`;
}

/** Splits `count` registers over `hosts` processes: [from, to) per host. */
export function ranges(count: number, hosts: number): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  const per = Math.ceil(count / hosts);
  for (let from = 0; from < count; from += per) out.push([from, Math.min(count, from + per)]);
  return out;
}

/**
 * The token lifetime and login limits of the REST services, declared once for `serve` and
 * `controller` (docs/security.md): the same flags, the same defaults (src/auth/auth-service.ts).
 */
import {
  DEFAULT_AUTH_BODY_LIMIT,
  DEFAULT_AUTH_MAX_FAILURES,
  DEFAULT_AUTH_USER_MAX_FAILURES,
  DEFAULT_AUTH_WINDOW_MS,
} from '../src/auth/auth-service.ts';
import { durationIn, positiveDuration, wholeNumber } from '../src/config.ts';
import { flag } from './flags.ts';

export const restAuthFlags = {
  tokenTtl: flag(
    '--token-ttl <duration>',
    'bearer token lifetime (a bare number is seconds)',
    durationIn('s', { min: 1 }),
    {
      default: '3600',
    },
  ),
  authMaxFailures: flag(
    '--auth-max-failures <n>',
    'failed authentications per address within --auth-window before 429',
    wholeNumber(1),
    { default: String(DEFAULT_AUTH_MAX_FAILURES) },
  ),
  authUserMaxFailures: flag(
    '--auth-user-max-failures <n>',
    'failed authentications per user name (from any address) within --auth-window; past it each address gets one attempt at that name per window',
    wholeNumber(1),
    { default: String(DEFAULT_AUTH_USER_MAX_FAILURES) },
  ),
  authWindow: flag('--auth-window <duration>', 'window of --auth-max-failures', positiveDuration, {
    default: `${DEFAULT_AUTH_WINDOW_MS / 1000}s`,
  }),
  authBodyLimit: flag(
    '--auth-body-limit <bytes>',
    'largest body /api/authenticate reads (413 BODY_TOO_LARGE above)',
    wholeNumber(64),
    { default: String(DEFAULT_AUTH_BODY_LIMIT) },
  ),
};

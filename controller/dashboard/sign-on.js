// Single sign-on (docs/controller.md, "Single sign-on"): when the controller has an identity
// provider (GET /api/oidc), the login view offers "Sign in with ...". The provider's round trip
// ends here with a one-time code in the URL's fragment (never a token in a URL; a fragment never
// reaches a server log), traded once for the session's bearer token by POST /api/oidc/session.

import { api } from './api.js';
import { $ } from './dom.js';
import { state, TOKEN_KEY } from './state.js';

const MESSAGES = {
  OIDC_FAILED: 'Single sign-on failed: sign in again.',
  OIDC_UNAVAILABLE: 'Single sign-on failed: the identity provider cannot be reached.',
  OIDC_NOT_CONFIGURED: 'Single sign-on is not set up on this controller.',
};

/** Shows "Sign in with <provider>" when the controller has one; without, nothing changes. */
export async function offerSignOn() {
  const { enabled, name, loginUrl } = await api('GET', '/api/oidc');
  if (!enabled) return;
  $('sso-link').textContent = `Sign in with ${name}`;
  $('sso-link').href = loginUrl;
  $('sso').hidden = false;
}

/**
 * The provider's answer in the fragment: undefined when there is none; otherwise a promise of
 * whether a token was obtained (a refusal is shown in the login view).
 */
export function takeSignOn() {
  const fragment = new URLSearchParams(location.hash.slice(1));
  const code = fragment.get('oidc');
  const error = fragment.get('oidc-error');
  if (code === null && error === null) return undefined;
  // The code is single-use; still, it leaves the address bar and the history at once.
  history.replaceState(null, '', location.pathname + location.search);
  if (error !== null) {
    $('login-error').textContent = MESSAGES[error] ?? `Single sign-on failed (${error}).`;
    return Promise.resolve(false);
  }
  return api('POST', '/api/oidc/session', { code }).then(
    ({ token }) => {
      state.token = token;
      sessionStorage.setItem(TOKEN_KEY, token);
      return true;
    },
    (failure) => {
      $('login-error').textContent = `Single sign-on failed: ${failure.message}`;
      return false;
    },
  );
}

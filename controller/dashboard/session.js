// The session's visible state: the connection line, failures, and the way back to the login form.

import { api, Unauthorized } from './api.js';
import { $ } from './dom.js';
import { state, TOKEN_KEY } from './state.js';

export function setConnection(text) {
  $('connection').textContent = text;
}

export function showFailure(error) {
  if (error instanceof Unauthorized) return loggedOut();
  setConnection(`Error: ${error.message}`);
}

export function loggedOut(message = 'Your session ended: log in again.') {
  state.events?.close();
  state.events = null;
  state.token = null;
  sessionStorage.removeItem(TOKEN_KEY);
  $('app-view').hidden = true;
  $('logout').hidden = true;
  $('whoami').hidden = true;
  $('login-view').hidden = false;
  $('login-error').textContent = message;
  setConnection('Not logged in');
  $('login-user').focus();
}

/** The Log out button: the token is revoked on the server (POST /api/logout), then forgotten. */
export async function logOut() {
  try {
    await api('POST', '/api/logout');
  } catch {
    // Revoked or expired already: forgetting it is all that is left to do.
  }
  loggedOut('Logged out.');
}

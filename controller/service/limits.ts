/** Bounds of the controller service's HTTP API (docs/controller.md, "Limits"). */

/** Largest script (UTF-8 bytes) a job may carry, as on the device. */
export const MAX_SCRIPT_BYTES = 1024 * 1024;
/** The request body may be larger than the script: JSON escaping inflates it. */
export const BODY_LIMIT = MAX_SCRIPT_BYTES * 2 + 64 * 1024;

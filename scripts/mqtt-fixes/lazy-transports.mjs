// Works around: mqtt.js 5 requires every transport (WebSocket with `ws`, TLS, and SOCKS with
// `socks` and `ip-address`) on its first connect, though a device uses one, mostly plain TCP to
// its own broker; in the bundle that is start-up time and memory for code that never runs.
// Delete when: mqtt.js loads a transport when it is first used (or `serve` drops its footprint
// goal); then drop this plugin from scripts/build.mjs.
//
// In the bundle each transport, and SOCKS, is required when first used: the same code runs,
// later. The guard: every substitution is counted per bundle, and the build fails, naming the
// file, if mqtt.js changed so that one no longer applies (mqtt is pinned in package-lock.json).

const RULES = [
  {
    file: /[\\/]mqtt[\\/]build[\\/]lib[\\/]connect[\\/]index\.js$/,
    from: /protocols\.(\w+) = require\('\.\/(\w+)'\)\.(\w+);/g,
    to: "protocols.$1 = (client, opts) => require('./$2').$3(client, opts);",
    expected: 12,
  },
  {
    file: /[\\/]mqtt[\\/]build[\\/]lib[\\/]connect[\\/]tcp\.js$/,
    from: /const socks_1 = __importDefault\(require\("\.\/socks"\)\);/g,
    to: 'const socks_1 = { get default() { return require("./socks").default; } };',
    expected: 1,
  },
  {
    file: /[\\/]mqtt[\\/]build[\\/]lib[\\/]connect[\\/]tls\.js$/,
    from: /const socks_1 = __importDefault\(require\("\.\/socks"\)\);/g,
    to: 'const socks_1 = { get default() { return require("./socks").default; } };',
    expected: 1,
  },
];

/** The esbuild onLoad step and its guard; `reset()` before each bundle, `check()` after it. */
export function lazyTransports(readFileSync) {
  const applied = new Map();
  return {
    filter: /[\\/]mqtt[\\/]build[\\/]lib[\\/]connect[\\/](index|tcp|tls)\.js$/,
    load(args) {
      const rule = RULES.find((r) => r.file.test(args.path));
      if (!rule) return undefined;
      let count = 0;
      const contents = readFileSync(args.path, 'utf8').replace(rule.from, (...match) => {
        count += 1;
        return rule.to.replace(/\$(\d)/g, (_, n) => match[Number(n)]);
      });
      applied.set(rule, count);
      return { contents, loader: 'js' };
    },
    reset() {
      applied.clear();
    },
    /** The first substitution that did not apply as expected, as an error message; undefined if all did. */
    check() {
      for (const rule of RULES) {
        const count = applied.get(rule) ?? 0;
        if (count !== rule.expected)
          return `build: mqtt.js's ${rule.file.source}: ${count} lazy transport substitutions, expected ${rule.expected} (mqtt.js changed? scripts/mqtt-fixes/lazy-transports.mjs)`;
      }
      return undefined;
    },
  };
}

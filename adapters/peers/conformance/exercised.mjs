// Reads the checks every scenario of a conformance run wrote (run.sh passes `-o` to each
// invocation: <results>/<leg>-<revision>/<scenario>-<timestamp>/checks.json, a server
// scenario's directory named `server-<scenario>-..`), prints one row per scenario (passed,
// failed, warnings, skipped checks, and why each skipped check was skipped) and exits
// non-zero when a scenario had checks SKIPPED — none of them run (NOT EXERCISED: it did not
// pass) or some (PARTLY SKIPPED) — and is not listed in not-exercised.txt with its reason, or
// when a listed scenario had no check skipped (then remove it).
//
//   node exercised.mjs <results dir> <not-exercised.txt>
import { readFileSync, readdirSync, statSync } from "node:fs";
import { join, relative, sep } from "node:path";

const [results, listPath] = process.argv.slice(2);
if (!results || !listPath) {
    console.error("usage: node exercised.mjs <results dir> <not-exercised.txt>");
    process.exit(2);
}

// `<leg>/<scenario>: <reason>` per line; `#` starts a comment.
const listed = new Map();
for (const line of readFileSync(listPath, "utf8").split("\n")) {
    const text = line.replace(/#.*/, "").trim();
    if (!text) continue;
    const colon = text.indexOf(":");
    const key = (colon < 0 ? text : text.slice(0, colon)).trim();
    const reason = colon < 0 ? "" : text.slice(colon + 1).trim();
    if (!/^(server|client)\/\S+$/.test(key) || !reason) {
        console.error(`not-exercised.txt: \`${line}\` is not \`<server|client>/<scenario>: <reason>\``);
        process.exit(2);
    }
    listed.set(key, reason);
}

function files(dir) {
    const out = [];
    for (const name of readdirSync(dir)) {
        const path = join(dir, name);
        if (statSync(path).isDirectory()) out.push(...files(path));
        else if (name === "checks.json") out.push(path);
    }
    return out;
}

const STAMP = /-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$/;
const rows = [];
for (const run of readdirSync(results).sort()) {
    const [leg, ...rest] = run.split("-");
    const revision = rest.join("-");
    for (const path of files(join(results, run))) {
        const dir = relative(join(results, run), join(path, "..")).split(sep).join("/");
        let scenario = dir.replace(STAMP, "");
        if (leg === "server") scenario = scenario.replace(/^server-/, "");
        const checks = JSON.parse(readFileSync(path, "utf8"));
        const count = (status) => checks.filter((check) => check.status === status).length;
        const why = [...new Set(checks
            .filter((check) => check.status === "SKIPPED")
            .map((check) => `${check.id}: ${check.errorMessage ?? check.description ?? ""}`))];
        rows.push({
            leg, revision, scenario, why,
            passed: count("SUCCESS"), failed: count("FAILURE"),
            warnings: count("WARNING"), skipped: count("SKIPPED"),
        });
    }
}
rows.sort((a, b) => `${a.leg} ${a.revision} ${a.scenario}`.localeCompare(`${b.leg} ${b.revision} ${b.scenario}`));

let status = 0;
const skipping = new Set();
console.log("| leg | revision | scenario | passed | failed | warnings | skipped | |");
for (const row of rows) {
    const key = `${row.leg}/${row.scenario}`;
    const vacuous = row.passed === 0 && row.failed === 0 && row.warnings === 0;
    if (row.skipped > 0 || vacuous) skipping.add(key);
    let verdict = vacuous ? "NOT EXERCISED"
        : row.failed + row.warnings > 0 ? "failed"
        : row.skipped > 0 ? "PARTLY SKIPPED" : "passed";
    if (skipping.has(key)) {
        if (listed.has(key)) verdict += ` (listed: ${listed.get(key)})`;
        else {
            verdict += " (not listed in not-exercised.txt)";
            status = 1;
        }
    }
    console.log(`| ${row.leg} | ${row.revision} | ${row.scenario} | ${row.passed} | ${row.failed} | ${row.warnings} | ${row.skipped} | ${verdict} |`);
    for (const why of row.why) console.log(`|   skipped: ${why.replace(/\s+/g, " ").slice(0, 200)}`);
}
if (rows.length === 0) {
    console.log("| no scenario wrote its checks: nothing was exercised |");
    status = 1;
}
for (const key of listed.keys()) {
    if (!skipping.has(key)) {
        console.log(`| ${key} is listed in not-exercised.txt but none of its checks was skipped: remove it |`);
        status = 1;
    }
}
process.exit(status);

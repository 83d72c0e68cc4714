// Side-by-side benchmark: tasklatch (`serve --http`, SQLite) against the TypeScript SDK's
// own reference task server (`reference-server.mjs`: McpServer + InMemoryTaskStore), in one
// run, the same load generator (`bench.mjs`) against each, alternating rounds so a noisy
// machine hurts both alike. Prints every round, then the medians and the ratios
// tasklatch / reference (throughput: above 1 is faster; p99 and server CPU per request:
// below 1 is faster). Server CPU is read from /proc around each round (Linux).
//
//   node compare.mjs --tasklatch ../../../target/release/tasklatch [--rounds 3]
//                    [--clients 16] [--seconds 8] [--gets 5] [--store-dir DIR]
//
// Both servers run on loopback ports chosen here; both are stopped at the end.

import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync, rmSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import net from 'node:net';

const here = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const option = (name, fallback) => {
    const at = args.indexOf(name);
    return at >= 0 && at + 1 < args.length ? args[at + 1] : fallback;
};
const tasklatch = option('--tasklatch', join(here, '../../../target/release/tasklatch'));
const rounds = Number(option('--rounds', '3'));
const clients = option('--clients', '16');
const seconds = option('--seconds', '8');
const gets = option('--gets', '5');
if (!(rounds >= 1 && rounds <= 20)) {
    console.error('--rounds must be 1..20');
    process.exit(2);
}

function freePort() {
    return new Promise((resolve, reject) => {
        const server = net.createServer();
        server.once('error', reject);
        server.listen(0, '127.0.0.1', () => {
            const { port } = server.address();
            server.close(() => resolve(port));
        });
    });
}

/** Starts a server process; resolves once its first stdout line says it listens. */
function startServer(command, commandArgs, label) {
    return new Promise((resolve, reject) => {
        const child = spawn(command, commandArgs, { stdio: ['ignore', 'pipe', 'inherit'] });
        let buffered = '';
        const timer = setTimeout(() => reject(new Error(`${label} did not start within 20 s`)), 20_000);
        child.once('exit', code => reject(new Error(`${label} exited early (${code})`)));
        child.stdout.on('data', chunk => {
            buffered += chunk;
            if (buffered.includes('listening')) {
                clearTimeout(timer);
                resolve(child);
            }
        });
    });
}

function runBench(url, token, label) {
    return new Promise((resolve, reject) => {
        const benchArgs = [join(here, 'bench.mjs'), '--url', url, '--clients', clients, '--seconds', seconds, '--gets', gets, '--label', label];
        if (token) benchArgs.push('--token', token);
        const child = spawn(process.execPath, benchArgs, { stdio: ['ignore', 'pipe', 'inherit'] });
        let out = '';
        child.stdout.on('data', chunk => (out += chunk));
        child.once('exit', code => {
            try {
                const report = JSON.parse(out);
                if (code !== 0) reject(new Error(`${label}: bench exited ${code}: ${out}`));
                else resolve(report);
            } catch (error) {
                reject(new Error(`${label}: unreadable bench output (${error.message}): ${out}`));
            }
        });
    });
}

/** CPU time (user + system) a process has used, in milliseconds (Linux /proc). */
function cpuMs(pid) {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    // Fields 14 and 15 of stat (utime, stime), counted after the ") " that ends the name.
    return (Number(fields[11]) + Number(fields[12])) * 10;
}

const median = values => {
    const sorted = [...values].sort((a, b) => a - b);
    return sorted[Math.floor(sorted.length / 2)];
};

const scratch = mkdtempSync(join(tmpdir(), 'tasklatch-compare-'));
const children = [];
try {
    const token = 'bench-token-0001';
    writeFileSync(join(scratch, 'tokens.json'), JSON.stringify({ tokens: { [token]: 'tenant-bench/user' } }));
    const tlPort = await freePort();
    children.push(await startServer(tasklatch, [
        'serve', '--http', `127.0.0.1:${tlPort}`, '--tokens', join(scratch, 'tokens.json'),
        '--store', `sqlite:${join(scratch, 'tasks.db')}`, '--workers', '4',
        // One token drives the whole load: its per-caller poll budget is lifted, since this
        // measures throughput, not the limits.
        '--polls-per-second', '1000000', '--poll-burst', '1000000'
    ], 'tasklatch'));
    const refPort = await freePort();
    children.push(await startServer(process.execPath, [join(here, 'reference-server.mjs'), '--port', String(refPort)], 'reference'));
    const targets = [
        { label: 'tasklatch', url: `http://127.0.0.1:${tlPort}/mcp`, token, pid: children[0].pid },
        { label: 'reference', url: `http://127.0.0.1:${refPort}/mcp`, token: null, pid: children[1].pid }
    ];
    const results = { tasklatch: [], reference: [] };
    for (let round = 0; round < rounds; round++) {
        // Alternate which goes first, so neither always runs on a warmer machine.
        const order = round % 2 === 0 ? targets : [...targets].reverse();
        for (const target of order) {
            const cpuBefore = cpuMs(target.pid);
            const report = await runBench(target.url, target.token, target.label);
            // The server's own CPU per request: what the load generator (one Node process,
            // often the bottleneck on a small machine) cannot hide.
            const requests = (report.creates_per_s + report.gets_per_s) * Number(seconds);
            report.server_cpu_us_per_request = +((cpuMs(target.pid) - cpuBefore) * 1000 / Math.max(requests, 1)).toFixed(1);
            results[target.label].push(report);
            console.log(JSON.stringify({ round, server: target.label, creates_per_s: report.creates_per_s, gets_per_s: report.gets_per_s, create_p99_ms: report.create_ms?.p99, get_p99_ms: report.get_ms?.p99, server_cpu_us_per_request: report.server_cpu_us_per_request, errors: report.errors?.total ?? report.errors }));
        }
    }
    const summary = {};
    for (const [label, reports] of Object.entries(results)) {
        summary[label] = {
            creates_per_s: median(reports.map(r => r.creates_per_s)),
            gets_per_s: median(reports.map(r => r.gets_per_s)),
            create_p99_ms: median(reports.map(r => r.create_ms.p99)),
            get_p99_ms: median(reports.map(r => r.get_ms.p99)),
            server_cpu_us_per_request: median(reports.map(r => r.server_cpu_us_per_request))
        };
    }
    const ratio = key => +(summary.tasklatch[key] / summary.reference[key]).toFixed(2);
    console.log(JSON.stringify({
        clients: Number(clients), seconds: Number(seconds), rounds,
        median: summary,
        ratio_tasklatch_over_reference: {
            creates_per_s: ratio('creates_per_s'),
            gets_per_s: ratio('gets_per_s'),
            create_p99_ms: ratio('create_p99_ms'),
            get_p99_ms: ratio('get_p99_ms'),
            server_cpu_us_per_request: ratio('server_cpu_us_per_request')
        }
    }, null, 2));
} finally {
    for (const child of children) child.kill('SIGKILL');
    rmSync(scratch, { recursive: true, force: true });
}

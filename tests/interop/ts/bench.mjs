#!/usr/bin/env node
// Load generator for MCP 2025-11-25 task servers (tasklatch and the TS SDK reference server).
// Raw fetch + JSON-RPC, no SDK client, so every server gets byte-for-byte the same load.
//
//   node bench.mjs --url http://127.0.0.1:PORT/mcp [--token T] [--clients 16] [--seconds 10]
//                  [--warmup 1] [--gets 5] [--timeout-ms 30000] [--label NAME]
//
// Each client: initialize (keeps Mcp-Session-Id), notifications/initialized, then loops:
//   tools/call export {name, delay_ms: 0} with task {ttl: 600000}   (create)
//   --gets times tasks/get on the created task id                   (get)
// Requests carry Accept: application/json, text/event-stream; an SSE-framed answer is parsed.
// Only operations that start after the warm-up and finish before the end are measured.
// Prints one JSON object on stdout. Exit status 0, or 1 if no operation succeeded.
// All traffic goes to --url only; the run stops by itself after warmup + seconds
// (plus at most one request timeout for requests still in flight).

import { randomBytes } from 'node:crypto';

function usage(msg) {
    if (msg) console.error(`bench.mjs: ${msg}`);
    console.error('usage: node bench.mjs --url URL [--token T] [--clients 16] [--seconds 10] [--warmup 1] [--gets 5] [--timeout-ms 30000] [--label NAME]');
    process.exit(2);
}

function parseArgs(argv) {
    const o = { url: undefined, token: undefined, clients: 16, seconds: 10, warmup: 1, gets: 5, timeoutMs: 30_000, label: undefined };
    for (let i = 0; i < argv.length; i++) {
        const a = argv[i];
        const next = () => (i + 1 < argv.length ? argv[++i] : usage(`missing value for ${a}`));
        switch (a) {
            case '--url': o.url = next(); break;
            case '--token': o.token = next(); break;
            case '--clients': o.clients = Number(next()); break;
            case '--seconds': o.seconds = Number(next()); break;
            case '--warmup': o.warmup = Number(next()); break;
            case '--gets': o.gets = Number(next()); break;
            case '--timeout-ms': o.timeoutMs = Number(next()); break;
            case '--label': o.label = next(); break;
            case '-h': case '--help': usage();
            default: usage(`unknown argument ${a}`);
        }
    }
    if (!o.url) usage('--url is required');
    const u = new URL(o.url);
    if (!['127.0.0.1', 'localhost', '[::1]', '::1'].includes(u.hostname) && !u.hostname.startsWith('127.')) {
        usage(`refusing to load a non-loopback host (${u.hostname})`);
    }
    if (!(Number.isInteger(o.clients) && o.clients >= 1 && o.clients <= 1024)) usage('--clients must be 1..1024');
    if (!(o.seconds > 0 && o.seconds <= 600)) usage('--seconds must be in (0, 600]');
    if (!(o.warmup >= 0 && o.warmup <= 60)) usage('--warmup must be in [0, 60]');
    if (!(Number.isInteger(o.gets) && o.gets >= 0 && o.gets <= 1000)) usage('--gets must be 0..1000');
    return o;
}

const opts = parseArgs(process.argv.slice(2));
const PROTOCOL_VERSION = '2025-11-25';

// ---------------------------------------------------------------- JSON-RPC over Streamable HTTP

class RpcError extends Error {
    constructor(kind, message, extra = {}) {
        super(message);
        this.kind = kind;
        Object.assign(this, extra);
    }
}

// Extract the JSON-RPC response with the given id from an SSE body ("data:" lines per event).
function parseSse(text, id) {
    const events = text.split(/\r?\n\r?\n/);
    for (const ev of events) {
        const data = ev
            .split(/\r?\n/)
            .filter(l => l.startsWith('data:'))
            .map(l => l.slice(5).replace(/^ /, ''))
            .join('\n');
        if (!data) continue;
        let msg;
        try {
            msg = JSON.parse(data);
        } catch {
            continue;
        }
        for (const m of Array.isArray(msg) ? msg : [msg]) {
            if (m && m.id === id && ('result' in m || 'error' in m)) return m;
        }
    }
    return undefined;
}

class Session {
    constructor(index) {
        this.index = index;
        this.sessionId = undefined;
        this.nextId = 1;
        this.sse = 0; // responses that came SSE-framed
    }

    headers(extra) {
        const h = {
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
            ...extra
        };
        if (opts.token) h.authorization = `Bearer ${opts.token}`;
        if (this.sessionId) {
            h['mcp-session-id'] = this.sessionId;
            h['mcp-protocol-version'] = PROTOCOL_VERSION;
        }
        return h;
    }

    async post(body) {
        let res;
        try {
            res = await fetch(opts.url, {
                method: 'POST',
                headers: this.headers(),
                body: JSON.stringify(body),
                signal: AbortSignal.timeout(opts.timeoutMs)
            });
        } catch (e) {
            throw new RpcError(e?.name === 'TimeoutError' ? 'timeout' : 'network', `${e?.name}: ${e?.message}`);
        }
        return res;
    }

    async call(method, params) {
        const id = this.nextId++;
        const res = await this.post({ jsonrpc: '2.0', id, method, ...(params !== undefined ? { params } : {}) });
        let text;
        try {
            text = await res.text();
        } catch (e) {
            throw new RpcError(e?.name === 'TimeoutError' ? 'timeout' : 'network', `reading body: ${e?.message}`);
        }
        if (!res.ok) throw new RpcError(`http-${res.status}`, `${method}: HTTP ${res.status} ${text.slice(0, 200)}`);
        const sid = res.headers.get('mcp-session-id');
        if (sid && !this.sessionId) this.sessionId = sid;
        const ct = (res.headers.get('content-type') ?? '').split(';')[0].trim().toLowerCase();
        let msg;
        if (ct === 'text/event-stream') {
            this.sse++;
            msg = parseSse(text, id);
            if (!msg) throw new RpcError('bad-sse', `${method}: no response for id ${id} in SSE body`);
        } else if (ct === 'application/json') {
            try {
                msg = JSON.parse(text);
            } catch {
                throw new RpcError('bad-json', `${method}: unparsable JSON body`);
            }
            if (Array.isArray(msg)) msg = msg.find(m => m.id === id);
        } else {
            throw new RpcError('bad-content-type', `${method}: content-type ${ct || '(none)'}`);
        }
        if (!msg || msg.id !== id) throw new RpcError('bad-id', `${method}: response id mismatch`);
        if (msg.error) throw new RpcError(`rpc${msg.error.code}`, `${method}: ${msg.error.code} ${msg.error.message}`);
        return msg.result;
    }

    async notify(method) {
        const res = await this.post({ jsonrpc: '2.0', method });
        await res.arrayBuffer().catch(() => {});
        if (res.status !== 202 && !res.ok) throw new RpcError(`http-${res.status}`, `${method}: HTTP ${res.status}`);
    }

    async initialize() {
        const r = await this.call('initialize', {
            protocolVersion: PROTOCOL_VERSION,
            capabilities: {},
            clientInfo: { name: `tasklatch-bench-${this.index}`, version: '0.1.0' }
        });
        if (r?.protocolVersion !== PROTOCOL_VERSION) {
            throw new RpcError('bad-version', `initialize: protocolVersion ${r?.protocolVersion}`);
        }
        if (!r?.capabilities?.tasks?.requests?.tools?.call) {
            throw new RpcError('no-task-capability', 'initialize: server lacks tasks.requests.tools.call');
        }
        await this.notify('notifications/initialized');
        return r;
    }

    async close() {
        if (!this.sessionId) return;
        try {
            const res = await fetch(opts.url, {
                method: 'DELETE',
                headers: this.headers(),
                signal: AbortSignal.timeout(5000)
            });
            await res.arrayBuffer().catch(() => {});
        } catch {
            /* best effort */
        }
    }
}

// ---------------------------------------------------------------- measurement

const stats = {
    create: [],
    get: [],
    errors: 0,
    errorKinds: {},
    errorSamples: [],
    warmupErrors: 0,
    getStatuses: {}
};

function recordError(e, measured) {
    if (!measured) {
        stats.warmupErrors++;
        return;
    }
    stats.errors++;
    const kind = e?.kind ?? 'exception';
    stats.errorKinds[kind] = (stats.errorKinds[kind] ?? 0) + 1;
    if (stats.errorSamples.length < 5) stats.errorSamples.push(String(e?.message ?? e).slice(0, 300));
}

function pct(sorted, p) {
    if (sorted.length === 0) return null;
    const idx = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
    return Math.round(sorted[idx] * 1000) / 1000;
}

function summary(arr) {
    const s = Float64Array.from(arr).sort();
    const mean = arr.length ? arr.reduce((a, b) => a + b, 0) / arr.length : null;
    return {
        count: arr.length,
        p50: pct(s, 50),
        p99: pct(s, 99),
        mean: mean === null ? null : Math.round(mean * 1000) / 1000,
        max: s.length ? Math.round(s[s.length - 1] * 1000) / 1000 : null
    };
}

// ---------------------------------------------------------------- run

const runTag = randomBytes(3).toString('hex');
const now = () => performance.now();

async function timed(fn, window, bucket) {
    const start = now();
    try {
        const r = await fn();
        const end = now();
        if (start >= window.from && end <= window.to) bucket.push(end - start);
        return r;
    } catch (e) {
        const end = now();
        recordError(e, start >= window.from && end <= window.to);
        return undefined;
    }
}

async function clientLoop(session, window) {
    let n = 0;
    while (now() < window.to) {
        const created = await timed(
            () =>
                session.call('tools/call', {
                    name: 'export',
                    arguments: { name: `bench-${runTag}-${session.index}-${n++}`, delay_ms: 0 },
                    task: { ttl: 600_000 }
                }),
            window,
            stats.create
        );
        const taskId = created?.task?.taskId;
        if (created && !taskId) {
            recordError(new RpcError('no-task', 'tools/call did not return CreateTaskResult.task.taskId'), now() <= window.to);
            continue;
        }
        if (!taskId) {
            // failed create: avoid a hot error loop against a broken server
            await new Promise(r => setTimeout(r, 10));
            continue;
        }
        for (let i = 0; i < opts.gets && now() < window.to; i++) {
            const t = await timed(() => session.call('tasks/get', { taskId }), window, stats.get);
            if (t) {
                if (t.taskId !== taskId || typeof t.status !== 'string') {
                    recordError(new RpcError('bad-task', 'tasks/get returned a malformed task'), true);
                } else {
                    stats.getStatuses[t.status] = (stats.getStatuses[t.status] ?? 0) + 1;
                }
            }
        }
    }
}

async function main() {
    const sessions = Array.from({ length: opts.clients }, (_, i) => new Session(i));
    const initStart = now();
    const inits = await Promise.allSettled(sessions.map(s => s.initialize()));
    const initMs = now() - initStart;
    const failedInit = inits.filter(r => r.status === 'rejected');
    if (failedInit.length === sessions.length) {
        const out = { url: opts.url, error: 'every client failed to initialize', reasons: failedInit.slice(0, 3).map(r => String(r.reason?.message ?? r.reason)) };
        process.stdout.write(JSON.stringify(out) + '\n');
        process.exit(1);
    }
    const live = sessions.filter((_, i) => inits[i].status === 'fulfilled');

    const t0 = now();
    const window = { from: t0 + opts.warmup * 1000, to: t0 + (opts.warmup + opts.seconds) * 1000 };
    await Promise.all(live.map(s => clientLoop(s, window)));
    const measuredSeconds = opts.seconds;

    await Promise.allSettled(live.map(s => s.close()));

    const out = {
        ...(opts.label ? { label: opts.label } : {}),
        url: opts.url,
        clients: live.length,
        clients_failed_init: failedInit.length,
        init_ms: Math.round(initMs),
        warmup_s: opts.warmup,
        seconds: measuredSeconds,
        gets_per_create: opts.gets,
        creates: stats.create.length,
        gets: stats.get.length,
        creates_per_s: Math.round((stats.create.length / measuredSeconds) * 10) / 10,
        gets_per_s: Math.round((stats.get.length / measuredSeconds) * 10) / 10,
        create_ms: summary(stats.create),
        get_ms: summary(stats.get),
        errors: stats.errors,
        error_kinds: stats.errorKinds,
        error_samples: stats.errorSamples,
        warmup_errors: stats.warmupErrors,
        get_statuses_incl_warmup: stats.getStatuses,
        sse_framed_responses: live.reduce((a, s) => a + s.sse, 0),
        node: process.version
    };
    process.stdout.write(JSON.stringify(out) + '\n');
    process.exit(stats.create.length + stats.get.length > 0 ? 0 : 1);
}

// Hard stop: warmup + seconds + one request timeout + slack.
setTimeout(() => {
    process.stdout.write(JSON.stringify({ url: opts.url, error: 'bench exceeded its time bound' }) + '\n');
    process.exit(1);
}, (opts.warmup + opts.seconds) * 1000 + opts.timeoutMs + 15_000).unref();

main().catch(e => {
    process.stdout.write(JSON.stringify({ url: opts.url, error: String(e?.stack ?? e) }) + '\n');
    process.exit(1);
});

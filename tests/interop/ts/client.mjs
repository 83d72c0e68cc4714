#!/usr/bin/env node
// Interop client for tasklatch, driven by the real TypeScript SDK (@modelcontextprotocol/sdk 1.32.2).
//
//   node client.mjs stdio [--trace] -- <server command and args...>
//   node client.mjs http --url http://127.0.0.1:PORT/mcp [--token token-a] [--other-token token-b] [--trace]
//
// Prints one JSON line per scenario: {"scenario": ..., "ok": true|false, "detail": ...}
// Exit status: 0 if every scenario passed, 1 if any failed, 2 on usage errors.
// --trace writes every JSON-RPC message sent/received to stderr.

import { randomBytes } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
    CallToolResultSchema,
    ElicitRequestSchema,
    ResultSchema,
    TaskStatusNotificationSchema,
    LATEST_PROTOCOL_VERSION
} from '@modelcontextprotocol/sdk/types.js';

const REQUEST_TIMEOUT_MS = 30_000; // per request
const RUN_TIMEOUT_MS = 180_000; // whole run
const RELATED_TASK_META_KEY = 'io.modelcontextprotocol/related-task';
const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

// ---------------------------------------------------------------- arguments

function usage(msg) {
    if (msg) console.error(`client.mjs: ${msg}`);
    console.error('usage: node client.mjs stdio [--trace] -- <server command and args...>');
    console.error('       node client.mjs http --url URL [--token T] [--other-token T2] [--trace]');
    process.exit(2);
}

function parseArgs(argv) {
    const mode = argv[0];
    const o = { mode, trace: false, url: undefined, token: undefined, otherToken: undefined, command: undefined, args: [] };
    if (mode !== 'stdio' && mode !== 'http') usage('first argument must be "stdio" or "http"');
    for (let i = 1; i < argv.length; i++) {
        const a = argv[i];
        const next = () => (i + 1 < argv.length ? argv[++i] : usage(`missing value for ${a}`));
        if (a === '--') {
            const rest = argv.slice(i + 1);
            if (rest.length === 0) usage('no server command after --');
            o.command = rest[0];
            o.args = rest.slice(1);
            break;
        } else if (a === '--trace') o.trace = true;
        else if (a === '--url') o.url = next();
        else if (a === '--token') o.token = next();
        else if (a === '--other-token') o.otherToken = next();
        else usage(`unknown argument ${a}`);
    }
    if (mode === 'stdio' && !o.command) usage('stdio mode needs -- <server command>');
    if (mode === 'http' && !o.url) usage('http mode needs --url');
    return o;
}

const opts = parseArgs(process.argv.slice(2));
const isHttp = opts.mode === 'http';

// ---------------------------------------------------------------- helpers

const results = [];
function report(scenario, ok, detail) {
    const line = { scenario, ok: !!ok, detail };
    results.push(line);
    process.stdout.write(JSON.stringify(line) + '\n');
}

function trace(label, dir, msg) {
    if (opts.trace) process.stderr.write(`[trace ${label}] ${dir} ${JSON.stringify(msg)}\n`);
}

// With --trace over HTTP, log each HTTP exchange (method, request headers, status, content type).
function tracingFetch(label) {
    return async (url, init = {}) => {
        const h = Object.fromEntries(new Headers(init.headers ?? {}).entries());
        if (h.authorization) h.authorization = h.authorization.replace(/^(Bearer )(.{0,4}).*$/i, '$1$2…');
        const res = await fetch(url, init);
        process.stderr.write(
            `[trace ${label}] HTTP ${init.method ?? 'GET'} ${url} ${JSON.stringify(h)} -> ${res.status} ` +
                `${res.headers.get('content-type') ?? '-'} session=${res.headers.get('mcp-session-id') ?? '-'}\n`
        );
        return res;
    };
}

// Wrap a transport so every JSON-RPC message in and out can be traced, and so the
// negotiated protocol version is visible (Client calls transport.setProtocolVersion
// after initialize when the transport has it; stdio's has not, so we add one).
function instrument(transport, label, state) {
    const origSend = transport.send.bind(transport);
    transport.send = (msg, o) => {
        trace(label, '->', msg);
        return origSend(msg, o);
    };
    let handler;
    Object.defineProperty(transport, 'onmessage', {
        configurable: true,
        get() {
            return handler && ((msg, extra) => {
                trace(label, '<-', msg);
                return handler(msg, extra);
            });
        },
        set(h) {
            handler = h;
        }
    });
    const origSetPv = transport.setProtocolVersion?.bind(transport);
    transport.setProtocolVersion = v => {
        state.protocolVersion = v;
        origSetPv?.(v);
    };
    return transport;
}

// The SDK turns JSON-RPC errors into McpError(code, "MCP error <code>: <message>").
// Transport failures are other Error classes (StreamableHTTPError has .code = HTTP status).
function errInfo(e) {
    if (!e) return null;
    const raw = String(e.message ?? e);
    const m = /^MCP error (-?\d+): ([\s\S]*)$/.exec(raw);
    return {
        class: e.name ?? e.constructor?.name,
        code: typeof e.code === 'number' ? e.code : undefined,
        message: m ? m[2] : raw,
        ...(e.data !== undefined ? { data: e.data } : {})
    };
}

async function expectError(fn) {
    try {
        const r = await fn();
        return { threw: false, result: r };
    } catch (e) {
        return { threw: true, error: errInfo(e) };
    }
}

function withTimeout(promise, ms, what) {
    let t;
    return Promise.race([
        promise,
        new Promise((_, rej) => {
            t = setTimeout(() => rej(new Error(`${what}: no answer within ${ms} ms`)), ms);
        })
    ]).finally(() => clearTimeout(t));
}

function textOf(result) {
    return (result?.content ?? []).filter(c => c.type === 'text').map(c => c.text).join('\n');
}

// A made-up task id shaped like a real one (same length, hex digits where it had hex digits).
function fakeIdLike(realId) {
    if (!realId) return randomBytes(16).toString('hex');
    const hex = '0123456789abcdef';
    let out = '';
    for (const ch of realId) {
        if (/[0-9a-f]/.test(ch)) out += hex[randomBytes(1)[0] & 15];
        else if (/[A-F]/.test(ch)) out += hex[randomBytes(1)[0] & 15].toUpperCase();
        else if (/[A-Za-z]/.test(ch)) out += String.fromCharCode(97 + (randomBytes(1)[0] % 26));
        else if (/[0-9]/.test(ch)) out += String(randomBytes(1)[0] % 10);
        else out += ch;
    }
    return out === realId ? fakeIdLike(realId) : out;
}

const uniq = `${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
const reqOpts = { timeout: REQUEST_TIMEOUT_MS };

// ---------------------------------------------------------------- connection

async function connect(label, token) {
    // elicitations: the elicitation/create requests the server sent; elicitAnswer: the reply.
    const state = {
        protocolVersion: undefined,
        statusNotifications: [],
        transport: undefined,
        elicitations: [],
        elicitAnswer: { action: 'decline' }
    };
    let transport;
    if (isHttp) {
        const headers = token ? { Authorization: `Bearer ${token}` } : {};
        transport = new StreamableHTTPClientTransport(new URL(opts.url), {
            requestInit: { headers },
            ...(opts.trace ? { fetch: tracingFetch(label) } : {})
        });
    } else {
        transport = new StdioClientTransport({
            command: opts.command,
            args: opts.args,
            env: { ...process.env }, // the SDK default passes only a short allow-list of variables
            stderr: 'inherit'
        });
    }
    state.transport = transport;
    instrument(transport, label, state);
    // Declares form elicitation, so the server may ask (export with confirm: true).
    const client = new Client({ name: `tasklatch-interop-${label}`, version: '0.1.0' }, { capabilities: { elicitation: {} } });
    client.setRequestHandler(ElicitRequestSchema, request => {
        state.elicitations.push(request);
        return state.elicitAnswer;
    });
    client.setNotificationHandler(TaskStatusNotificationSchema, n => {
        state.statusNotifications.push({ taskId: n.params.taskId, status: n.params.status });
    });
    client.onerror = e => {
        if (opts.trace) process.stderr.write(`[trace ${label}] transport error: ${e?.message ?? e}\n`);
    };
    await client.connect(transport, reqOpts);
    return { client, state };
}

async function disconnect(conn) {
    if (!conn) return;
    try {
        if (isHttp && conn.state.transport.sessionId) await withTimeout(conn.state.transport.terminateSession(), 5000, 'DELETE session');
    } catch (e) {
        process.stderr.write(`client.mjs: session DELETE failed: ${e.message}\n`);
    }
    await withTimeout(conn.client.close(), 5000, 'close').catch(() => {});
}

// Drive callToolStream to the end, collecting every message.
async function runStream(client, params, options) {
    const msgs = [];
    for await (const m of client.experimental.tasks.callToolStream(params, CallToolResultSchema, options)) {
        msgs.push(m);
    }
    const created = msgs.find(m => m.type === 'taskCreated');
    const statuses = msgs.filter(m => m.type === 'taskStatus').map(m => m.task.status);
    const final = msgs[msgs.length - 1];
    return { msgs, created: created?.task, statuses, final };
}

// ---------------------------------------------------------------- scenarios

const created = {}; // task ids made by the main client, for the list scenario

async function scenarioInitialize(conn) {
    const caps = conn.client.getServerCapabilities() ?? {};
    const tasks = caps.tasks;
    const hasCall = tasks?.requests?.tools?.call !== undefined;
    const hasList = tasks?.list !== undefined;
    const hasCancel = tasks?.cancel !== undefined;
    const listOk = isHttp ? hasList : !hasList;
    report('initialize', hasCall && listOk && hasCancel && conn.state.protocolVersion === LATEST_PROTOCOL_VERSION, {
        protocolVersion: conn.state.protocolVersion,
        serverInfo: conn.client.getServerVersion(),
        tasks,
        expect: { 'tasks.requests.tools.call': true, 'tasks.list': isHttp, 'tasks.cancel': true, protocolVersion: LATEST_PROTOCOL_VERSION },
        sessionId: isHttp ? conn.state.transport.sessionId ?? null : undefined
    });
}

async function scenarioToolsList(conn) {
    const r = await conn.client.listTools(undefined, reqOpts); // also primes the SDK's taskSupport cache
    const got = Object.fromEntries(r.tools.map(t => [t.name, t.execution?.taskSupport ?? '(absent)']));
    const want = { export: 'optional', archive: 'required', echo: 'forbidden' };
    // 'forbidden' may also be expressed by omitting execution.taskSupport.
    const ok = Object.entries(want).every(([n, s]) => got[n] === s || (s === 'forbidden' && got[n] === '(absent)'));
    report('tools/list', ok, { taskSupport: got, want });
}

async function scenarioTaskLifecycle(conn) {
    const name = `interop-${uniq}-a`;
    const t0 = Date.now();
    const s = await runStream(
        conn.client,
        { name: 'export', arguments: { name, rows: 3, delay_ms: 300 } },
        { ...reqOpts, task: { ttl: 120_000 } }
    );
    const elapsed = Date.now() - t0;
    const taskId = s.created?.taskId;
    if (taskId) created.lifecycle = taskId;
    const result = s.final?.type === 'result' ? s.final.result : undefined;
    const text = textOf(result);
    const namesExport = !!text && (text.includes(name) || /export/i.test(text));
    const detail = {
        taskId,
        taskCreated: s.created ?? null,
        statuses: s.statuses,
        final: s.final?.type,
        error: s.final?.type === 'error' ? errInfo(s.final.error) : undefined,
        resultText: text,
        resultNamesOurExportName: text.includes(name),
        elapsed_ms: elapsed
    };
    let ok = !!s.created && s.created.status === 'working' && 'ttl' in s.created && !!result && namesExport;
    if (taskId) {
        const g = await expectError(() => conn.client.experimental.tasks.getTask(taskId, reqOpts));
        detail.getTask = g.threw ? { error: g.error } : g.result;
        ok = ok && !g.threw && g.result.status === 'completed' && g.result.taskId === taskId;
        const rr = await expectError(() => conn.client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema, reqOpts));
        if (rr.threw) {
            detail.getTaskResult = { error: rr.error };
            ok = false;
        } else {
            const related = rr.result._meta?.[RELATED_TASK_META_KEY];
            detail.getTaskResult = { text: textOf(rr.result), isError: rr.result.isError, relatedTaskMeta: related ?? null };
            ok = ok && textOf(rr.result) === text && related?.taskId === taskId;
        }
    }
    detail.statusNotificationsSoFar = conn.state.statusNotifications.filter(n => n.taskId === taskId);
    report('task-create-poll-result', ok, detail);
}

async function scenarioCancel(conn) {
    const tasks = conn.client.experimental.tasks;
    const name = `interop-${uniq}-cancel`;
    const gen = tasks.callToolStream(
        { name: 'export', arguments: { name, delay_ms: 5000 } },
        CallToolResultSchema,
        { ...reqOpts, task: { ttl: 120_000 } }
    );
    const first = await gen.next();
    await gen.return(undefined); // stop the SDK's polling loop; we drive the rest by hand
    const detail = { first: first.value?.type };
    if (first.value?.type !== 'taskCreated') {
        detail.error = first.value?.type === 'error' ? errInfo(first.value.error) : first.value;
        report('cancel', false, detail);
        return;
    }
    const taskId = first.value.task.taskId;
    created.cancelled = taskId;
    detail.taskId = taskId;
    const c1 = await expectError(() => tasks.cancelTask(taskId, reqOpts));
    detail.cancel = c1.threw ? { error: c1.error } : { status: c1.result.status, statusMessage: c1.result.statusMessage };
    const g = await expectError(() => tasks.getTask(taskId, reqOpts));
    detail.getTask = g.threw ? { error: g.error } : { status: g.result.status, statusMessage: g.result.statusMessage };
    const c2 = await expectError(() => tasks.cancelTask(taskId, reqOpts));
    detail.cancelAgain = c2.threw ? { error: c2.error } : { unexpectedResult: c2.result };
    const ok = !c1.threw && c1.result.status === 'cancelled' && !g.threw && g.result.status === 'cancelled' && c2.threw && c2.error.code === -32602;
    report('cancel', ok, detail);

    // tasks/result on a cancelled task: the brief for tasklatch says -32603 (the TS SDK does the same).
    const r = await expectError(() => tasks.getTaskResult(taskId, CallToolResultSchema, { timeout: 10_000 }));
    report('result-of-cancelled', r.threw && r.error.code === -32603, {
        taskId,
        expect: { code: -32603 },
        got: r.threw ? r.error : { unexpectedResult: r.result }
    });
}

// tasks/result on a still-working task must block until the task is terminal (over HTTP
// tasklatch answers this one with SSE). Create, then ask for the result right away.
async function scenarioBlockingResult(conn) {
    const tasks = conn.client.experimental.tasks;
    const delay = 1500;
    const name = `interop-${uniq}-block`;
    const gen = tasks.callToolStream(
        { name: 'export', arguments: { name, delay_ms: delay } },
        CallToolResultSchema,
        { ...reqOpts, task: { ttl: 120_000 } }
    );
    const first = await gen.next();
    await gen.return(undefined);
    if (first.value?.type !== 'taskCreated') {
        report('result-blocks-until-terminal', false, { first: first.value?.type, error: first.value?.type === 'error' ? errInfo(first.value.error) : undefined });
        return;
    }
    const taskId = first.value.task.taskId;
    created.blocking = taskId;
    const t0 = Date.now();
    const r = await expectError(() => tasks.getTaskResult(taskId, CallToolResultSchema, { timeout: 20_000 }));
    const waited = Date.now() - t0;
    const g = await expectError(() => tasks.getTask(taskId, reqOpts));
    const text = r.threw ? '' : textOf(r.result);
    // The task was created before t0, so the wait can be a little under delay_ms.
    const ok = !r.threw && text.length > 0 && r.result._meta?.[RELATED_TASK_META_KEY]?.taskId === taskId &&
        waited >= delay - 500 && !g.threw && g.result.status === 'completed';
    report('result-blocks-until-terminal', ok, {
        taskId,
        delay_ms: delay,
        waited_ms: waited,
        result: r.threw ? { error: r.error } : { text, relatedTaskMeta: r.result._meta?.[RELATED_TASK_META_KEY] ?? null },
        getTaskAfter: g.threw ? { error: g.error } : { status: g.result.status }
    });
}

// export with confirm: true asks (input_required); callToolStream then blocks in tasks/result,
// on whose stream the server sends elicitation/create; this client's answer decides.
async function scenarioInputRoundTrip(conn) {
    const { client, state } = conn;
    const runs = {};
    const cases = [
        ['accept', { action: 'accept', content: { confirm: true } }, false],
        ['decline', { action: 'decline' }, true]
    ];
    for (const [label, answer, wantError] of cases) {
        state.elicitations.length = 0;
        state.elicitAnswer = answer;
        const name = `interop-${uniq}-confirm-${label}`;
        const s = await runStream(
            client,
            { name: 'export', arguments: { name, delay_ms: 0, confirm: true } },
            { ...reqOpts, task: { ttl: 120_000 } }
        );
        const taskId = s.created?.taskId;
        const asked = state.elicitations.slice();
        const related = asked.map(r => r.params?._meta?.[RELATED_TASK_META_KEY]?.taskId ?? null);
        const result = s.final?.type === 'result' ? s.final.result : undefined;
        const text = textOf(result);
        const ok =
            !!taskId &&
            s.statuses.includes('input_required') &&
            asked.length === 1 &&
            related[0] === taskId &&
            asked[0].params?.requestedSchema?.properties?.confirm?.type === 'boolean' &&
            !!result &&
            result.isError === wantError &&
            (wantError ? text === 'export cancelled by the requestor' : text.includes(name));
        runs[label] = {
            ok,
            taskId,
            statuses: s.statuses,
            asked: asked.length,
            relatedTaskMeta: related,
            final: s.final?.type,
            text,
            error: s.final?.type === 'error' ? errInfo(s.final.error) : undefined
        };
    }
    state.elicitAnswer = { action: 'decline' };
    report('input-round-trip', Object.values(runs).every(r => r.ok), runs);
}

async function listAll(client) {
    const all = [];
    let cursor;
    for (let page = 0; page < 100; page++) {
        const r = await client.experimental.tasks.listTasks(cursor, reqOpts);
        all.push(...r.tasks);
        if (!r.nextCursor) return { tasks: all, pages: page + 1 };
        cursor = r.nextCursor;
    }
    return { tasks: all, pages: 100, truncated: true };
}

async function scenarioList(conn) {
    if (!isHttp) {
        // Over stdio tasklatch declares no tasks.list; the SDK does not refuse locally
        // (enforceStrictCapabilities is off), so the request reaches the server.
        const r = await expectError(() => conn.client.experimental.tasks.listTasks(undefined, reqOpts));
        report('list-absent-over-stdio', r.threw && r.error.code === -32601, {
            expect: { code: -32601 },
            got: r.threw ? r.error : { unexpectedResult: { count: r.result.tasks?.length } }
        });
        return;
    }
    const r = await expectError(() => listAll(conn.client));
    if (r.threw) {
        report('list', false, { error: r.error });
        return;
    }
    const ids = new Set(r.result.tasks.map(t => t.taskId));
    const want = Object.entries(created).filter(([, v]) => v);
    const missing = want.filter(([, id]) => !ids.has(id)).map(([k, id]) => `${k}:${id}`);
    report('list', want.length > 0 && missing.length === 0, {
        listed: r.result.tasks.length,
        pages: r.result.pages,
        expected: Object.fromEntries(want),
        missing,
        sample: r.result.tasks.slice(0, 3)
    });
}

async function scenarioRequired(conn) {
    const { client } = conn;
    const s = await runStream(
        client,
        { name: 'archive', arguments: { items: ['a', 'b'] } },
        { ...reqOpts, task: { ttl: 60_000 } }
    );
    if (s.created?.taskId) created.archive = s.created.taskId;
    const streamOk = !!s.created && s.final?.type === 'result';
    // 1) the SDK's plain callTool: after listTools it refuses 'required' tools locally.
    const plain = await expectError(() => client.callTool({ name: 'archive', arguments: { items: ['c'] } }, CallToolResultSchema, reqOpts));
    let plainOutcome;
    if (plain.threw) {
        plainOutcome = plain.error.code === -32600 && /requires task-based execution/.test(plain.error.message) ? 'sdk-local-refusal' : 'error';
    } else plainOutcome = plain.result.isError ? 'isError-result' : 'success';
    // 2) a raw tools/call without task (client.request bypasses the local guard) must reach the server.
    const raw = await expectError(() =>
        client.request({ method: 'tools/call', params: { name: 'archive', arguments: { items: ['d'] } } }, ResultSchema, reqOpts)
    );
    const rawOk = raw.threw && raw.error.code === -32601;
    report('required-tool', streamOk && rawOk && (plainOutcome === 'sdk-local-refusal' || (plain.threw && plain.error.code === -32601)), {
        callToolStream: {
            taskId: s.created?.taskId,
            statuses: s.statuses,
            final: s.final?.type,
            text: s.final?.type === 'result' ? textOf(s.final.result) : undefined,
            error: s.final?.type === 'error' ? errInfo(s.final.error) : undefined
        },
        plainCallTool: { outcome: plainOutcome, ...(plain.threw ? { error: plain.error } : { result: plain.result }) },
        rawWithoutTask: raw.threw ? { error: raw.error } : { unexpectedResult: raw.result },
        expect: { rawWithoutTask: -32601 }
    });
}

async function scenarioForbidden(conn) {
    const { client } = conn;
    const text = `hello-${uniq}`;
    const plain = await expectError(() => client.callTool({ name: 'echo', arguments: { text } }, CallToolResultSchema, reqOpts));
    const plainOk = !plain.threw && textOf(plain.result) === text && !plain.result.isError;
    // The SDK would never add task for a forbidden tool, so send the task param by hand.
    const raw = await expectError(() =>
        client.request({ method: 'tools/call', params: { name: 'echo', arguments: { text }, task: {} } }, ResultSchema, reqOpts)
    );
    const rawOk = raw.threw && raw.error.code === -32601;
    report('forbidden-tool', plainOk && rawOk, {
        plainCallTool: plain.threw ? { error: plain.error } : { text: textOf(plain.result), isError: plain.result.isError },
        rawWithTask: raw.threw ? { error: raw.error } : { unexpectedResult: raw.result },
        expect: { rawWithTask: -32601 }
    });
}

async function scenarioUnknownId(conn) {
    const tasks = conn.client.experimental.tasks;
    const id = fakeIdLike(created.lifecycle);
    const g = await expectError(() => tasks.getTask(id, reqOpts));
    const r = await expectError(() => tasks.getTaskResult(id, CallToolResultSchema, { timeout: 10_000 }));
    const c = await expectError(() => tasks.cancelTask(id, reqOpts));
    const all = [g, r, c];
    report('unknown-task-id', all.every(x => x.threw && x.error.code === -32602), {
        taskId: id,
        getTask: g.threw ? g.error : { unexpectedResult: g.result },
        getTaskResult: r.threw ? r.error : { unexpectedResult: r.result },
        cancelTask: c.threw ? c.error : { unexpectedResult: c.result }
    });
}

async function scenarioTwoTokens(connA) {
    if (!opts.otherToken && opts.token) {
        report('two-tokens', false, { skipped: true, reason: 'no --other-token given' });
        return;
    }
    const A = connA.client.experimental.tasks;
    // A task of A's that is still running, so "not yours" cannot be confused with "terminal".
    const gen = A.callToolStream(
        { name: 'export', arguments: { name: `interop-${uniq}-owned`, delay_ms: 5000 } },
        CallToolResultSchema,
        { ...reqOpts, task: { ttl: 120_000 } }
    );
    const first = await gen.next();
    await gen.return(undefined);
    if (first.value?.type !== 'taskCreated') {
        report('two-tokens', false, { error: 'could not create a task as token A', got: first.value?.type === 'error' ? errInfo(first.value.error) : first.value });
        return;
    }
    const taskId = first.value.task.taskId;
    const fakeId = fakeIdLike(taskId);
    let connB;
    try {
        connB = await connect('B', opts.otherToken);
        const B = connB.client.experimental.tasks;
        const probe = async id => ({
            get: await expectError(() => B.getTask(id, reqOpts)),
            result: await expectError(() => B.getTaskResult(id, CallToolResultSchema, { timeout: 10_000 })),
            cancel: await expectError(() => B.cancelTask(id, reqOpts))
        });
        const notYours = await probe(taskId);
        const madeUp = await probe(fakeId);
        const listB = await expectError(() => listAll(connB.client));
        const stillA = await expectError(() => A.getTask(taskId, reqOpts));

        const norm = (e, id) => e && { code: e.code, message: e.message.split(id).join('<taskId>') };
        const cmp = {};
        let ok = true;
        for (const op of ['get', 'result', 'cancel']) {
            const a = notYours[op];
            const b = madeUp[op];
            const rejected = a.threw && a.error.code === -32602;
            const identicalRaw = a.threw && b.threw && a.error.code === b.error.code && a.error.message === b.error.message;
            const na = a.threw ? norm(a.error, taskId) : null;
            const nb = b.threw ? norm(b.error, fakeId) : null;
            const identicalModuloId = !!na && !!nb && na.code === nb.code && na.message === nb.message;
            cmp[op] = {
                notYours: a.threw ? a.error : { unexpectedResult: a.result },
                madeUp: b.threw ? b.error : { unexpectedResult: b.result },
                rejectedWith32602: rejected,
                identicalRaw,
                identicalModuloId
            };
            ok = ok && rejected && identicalRaw; // tasklatch promises byte-identical answers
        }
        const listedForB = listB.threw ? null : listB.result.tasks.some(t => t.taskId === taskId);
        ok = ok && !listB.threw && listedForB === false;
        const aStillWorking = !stillA.threw && stillA.result.status === 'working';
        ok = ok && aStillWorking;
        report('two-tokens', ok, {
            taskId,
            fakeId,
            ops: cmp,
            listB: listB.threw ? { error: listB.error } : { count: listB.result.tasks.length, containsAsTask: listedForB },
            ownerStillSees: stillA.threw ? { error: stillA.error } : { status: stillA.result.status },
            note: 'identicalRaw (code and message equal, byte for byte) decides; identicalModuloId is shown for servers that echo the id'
        });
    } catch (e) {
        report('two-tokens', false, { taskId, error: errInfo(e) });
    } finally {
        await disconnect(connB);
        await A.cancelTask(taskId, reqOpts).catch(() => {});
    }
}

// ---------------------------------------------------------------- main

async function main() {
    let conn;
    try {
        conn = await connect('A', opts.token);
    } catch (e) {
        report('initialize', false, { error: errInfo(e), stage: 'connect' });
        return;
    }
    const steps = [
        ['initialize', scenarioInitialize],
        ['tools/list', scenarioToolsList],
        ['task-create-poll-result', scenarioTaskLifecycle],
        ['cancel', scenarioCancel],
        ['result-blocks-until-terminal', scenarioBlockingResult],
        ['required-tool', scenarioRequired],
        ['forbidden-tool', scenarioForbidden],
        [isHttp ? 'list' : 'list-absent-over-stdio', scenarioList],
        ['unknown-task-id', scenarioUnknownId],
        ['input-round-trip', scenarioInputRoundTrip]
    ];
    if (isHttp) steps.push(['two-tokens', scenarioTwoTokens]);
    for (const [name, fn] of steps) {
        try {
            await withTimeout(fn(conn), 60_000, name);
        } catch (e) {
            report(name, false, { error: errInfo(e), stack: e?.stack?.split('\n').slice(0, 4) });
        }
    }
    await disconnect(conn);
}

const watchdog = setTimeout(() => {
    report('run', false, { error: `whole run exceeded ${RUN_TIMEOUT_MS} ms` });
    process.exit(1);
}, RUN_TIMEOUT_MS);
watchdog.unref();

main()
    .catch(e => report('run', false, { error: errInfo(e) }))
    .finally(() => {
        const failed = results.filter(r => !r.ok).length;
        process.stderr.write(`client.mjs: ${results.length - failed} passed, ${failed} failed\n`);
        process.exit(failed ? 1 : 0);
    });

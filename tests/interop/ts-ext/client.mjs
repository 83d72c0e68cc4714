#!/usr/bin/env node
// Interop client for tasklatch's 2026-07-28 tasks extension (`io.modelcontextprotocol/tasks`),
// driven by the official requester-side package: @modelcontextprotocol/ext-tasks 0.2.2 on
// @modelcontextprotocol/client 2.4.0 (Node >= 20).
//
//   node client.mjs --url http://127.0.0.1:PORT/mcp [--token T] [--other-token T2] [--trace]
//
// The server must offer the official conformance suite's fixture tools (greet, slow_compute,
// failing_job, protocol_error_job, confirm_delete, multi_input), as `tasklatch serve --http
// ... --conformance-tools` does.
//
// Prints one JSON line per scenario: {"scenario": ..., "ok": true|false, "detail": ...}
// Exit status: 0 if every scenario passed, 1 if any failed, 2 on usage errors.
// --trace writes every JSON-RPC message and HTTP exchange to stderr (tokens shortened).
//
// How it talks: the SDK Client connects with `server/discover` pinned to 2026-07-28 and serves
// `tools/list`; the SDK's own codecs reject `resultType: "task"`, so ext-tasks hands
// `tools/call` and every `tasks/*` request (with the per-request `_meta` already framed) to
// `rawDispatch` below: one POST per request, with the MCP-Protocol-Version, Mcp-Method and
// Mcp-Name headers the 2026-07-28 HTTP transport asks for.

import { randomBytes } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import {
    createTaskSessionFromClient,
    JsonRpcResponseError,
    resultFromTaskOutcome
} from '@modelcontextprotocol/ext-tasks/client';

const PROTOCOL = '2026-07-28';
const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';
const REQUEST_TIMEOUT_MS = 30_000; // per request
const SCENARIO_TIMEOUT_MS = 60_000;
const RUN_TIMEOUT_MS = 240_000; // whole run
const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

// ---------------------------------------------------------------- arguments

function usage(msg) {
    if (msg) console.error(`client.mjs: ${msg}`);
    console.error('usage: node client.mjs --url URL [--token T] [--other-token T2] [--trace]');
    process.exit(2);
}

function parseArgs(argv) {
    const o = { trace: false, url: undefined, token: undefined, otherToken: undefined };
    for (let i = 0; i < argv.length; i++) {
        const a = argv[i];
        const next = () => (i + 1 < argv.length ? argv[++i] : usage(`missing value for ${a}`));
        if (a === '--trace') o.trace = true;
        else if (a === '--url') o.url = next();
        else if (a === '--token') o.token = next();
        else if (a === '--other-token') o.otherToken = next();
        else usage(`unknown argument ${a}`);
    }
    if (!o.url) usage('--url is required');
    return o;
}

const opts = parseArgs(process.argv.slice(2));

// ---------------------------------------------------------------- helpers

const results = [];
function report(scenario, ok, detail) {
    const line = { scenario, ok: !!ok, detail };
    results.push(line);
    process.stdout.write(JSON.stringify(line) + '\n');
}

function trace(label, text) {
    if (opts.trace) process.stderr.write(`[trace ${label}] ${text}\n`);
}

function redactHeaders(headers) {
    const h = Object.fromEntries(new Headers(headers ?? {}).entries());
    if (h.authorization) h.authorization = h.authorization.replace(/^(Bearer )(.{0,4}).*$/i, '$1$2…');
    return h;
}

// With --trace, log each HTTP exchange the SDK client makes (discover, tools/list).
function tracingFetch(label) {
    return async (url, init = {}) => {
        const res = await fetch(url, init);
        trace(label, `HTTP ${init.method ?? 'GET'} ${url} ${JSON.stringify(redactHeaders(init.headers))} -> ${res.status} ${res.headers.get('content-type') ?? '-'}`);
        if (typeof init.body === 'string') trace(label, `-> ${init.body}`);
        return res;
    };
}

function errInfo(e) {
    if (!e) return null;
    return {
        class: e.name ?? e.constructor?.name,
        ...(typeof e.code === 'number' ? { code: e.code } : {}),
        message: String(e.message ?? e),
        ...(e.data !== undefined ? { data: e.data } : {}),
        ...(e.cause ? { cause: String(e.cause?.message ?? e.cause) } : {})
    };
}

async function attempt(fn) {
    try {
        return { threw: false, result: await fn() };
    } catch (e) {
        return { threw: true, error: errInfo(e), raw: e };
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

const sleep = ms => new Promise(r => setTimeout(r, ms));

function textOf(result) {
    return (result?.content ?? []).filter(c => c.type === 'text').map(c => c.text).join('\n');
}

function withoutMeta(value) {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
    const { _meta, ...rest } = value;
    return rest;
}

// Polls a task controller until `done(view)` holds (views are ext-tasks TaskView objects).
async function pollUntil(controller, done, what, limitMs = 20_000) {
    const start = Date.now();
    let view;
    for (;;) {
        view = await controller.snapshot();
        if (done(view)) return view;
        if (Date.now() - start > limitMs) throw new Error(`${what}: last status ${view.status} after ${limitMs} ms`);
        await sleep(Math.min(view.suggestedPollIntervalMs ?? 100, 200));
    }
}

// ---------------------------------------------------------------- connection

// One connection: the SDK client, the ext-tasks session on top of it, and a wire log of
// everything that went through rawDispatch ({method, params, status, response}).
async function connect(label, token) {
    const auth = token ? { Authorization: `Bearer ${token}` } : {};
    const clientInfo = { name: `tasklatch-interop-ext-tasks-${label}`, version: '0.1.0' };
    const clientCapabilities = { extensions: { [TASKS_EXTENSION]: {} } };
    const client = new Client(clientInfo, {
        capabilities: clientCapabilities,
        versionNegotiation: { mode: { pin: PROTOCOL } }
    });
    client.onerror = e => trace(label, `client error: ${e?.message ?? e}`);
    const transport = new StreamableHTTPClientTransport(new URL(opts.url), {
        requestInit: { headers: auth },
        ...(opts.trace ? { fetch: tracingFetch(label) } : {})
    });
    await client.connect(transport, { timeout: REQUEST_TIMEOUT_MS });

    const wire = [];
    let nextId = 1;
    async function rawDispatch(request, options = {}) {
        const body = { jsonrpc: '2.0', id: `${label}-${nextId++}`, ...request };
        const name = request.method === 'tools/call' ? request.params?.name : request.params?.taskId;
        const headers = {
            'Content-Type': 'application/json',
            Accept: 'application/json, text/event-stream',
            'MCP-Protocol-Version': PROTOCOL,
            'Mcp-Method': request.method,
            ...(name === undefined ? {} : { 'Mcp-Name': String(name) }),
            ...auth,
            ...(options.context?.headers ?? {})
        };
        const timeout = AbortSignal.timeout(options.context?.requestTimeoutMs ?? REQUEST_TIMEOUT_MS);
        const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
        const text = JSON.stringify(body);
        trace(label, `-> POST ${JSON.stringify(redactHeaders(headers))} ${text}`);
        const response = await fetch(opts.url, { method: 'POST', headers, body: text, signal });
        const type = response.headers.get('content-type') ?? '';
        const reply = await response.text();
        trace(label, `<- ${response.status} ${type} ${reply}`);
        let message;
        if (type.startsWith('text/event-stream')) {
            for (const line of reply.split('\n')) {
                if (!line.startsWith('data:')) continue;
                const candidate = JSON.parse(line.slice(5));
                if (candidate.id === body.id) message = candidate;
            }
        } else if (reply) {
            message = JSON.parse(reply);
        }
        const entry = { method: request.method, params: request.params, status: response.status };
        wire.push(entry);
        if (message?.error) {
            entry.error = message.error;
            return { kind: 'error', error: message.error };
        }
        if (message && 'result' in message) {
            entry.result = message.result;
            return { kind: 'result', result: message.result };
        }
        entry.unparsed = reply.slice(0, 200);
        throw new Error(`HTTP ${response.status}: ${reply.slice(0, 200)}`);
    }

    const session = createTaskSessionFromClient(client, {
        endpointId: `${opts.url}#${label}`,
        rawDispatch,
        v2RequestFraming: { protocolVersion: PROTOCOL, clientInfo, clientCapabilities },
        // Every input request of every task lands here; each call says, through its
        // applicationContext, how to answer. Without one, nothing is answered.
        onInputRequest: (request, context) => {
            const answer = context.applicationContext?.onInput;
            if (answer) return answer(request, context);
            return new Promise((_, reject) => {
                const stop = () => reject(new Error('no answer: the execution was detached'));
                if (context.signal?.aborted) stop();
                else context.signal?.addEventListener('abort', stop, { once: true });
            });
        },
        onError: e => trace(label, `ext-tasks background error: ${e?.message ?? e}`)
    });
    return { label, client, session, wire };
}

async function disconnect(conn) {
    if (!conn) return;
    await withTimeout(conn.session.close(), 5000, 'session close').catch(() => {});
    await withTimeout(conn.client.close(), 5000, 'client close').catch(() => {});
}

// The wire log entries from `from` on, for one task.
function wireFor(conn, from, taskId) {
    return conn.wire.slice(from).filter(e => e.params?.taskId === taskId);
}

function lastGet(conn, from, taskId) {
    return wireFor(conn, from, taskId).filter(e => e.method === 'tasks/get').at(-1);
}

// Runs a tool as a task through ext-tasks' own driver (polling tasks/get, answering input
// with tasks/update) and collects the statuses it saw.
async function runTask(conn, tool, args, applicationContext) {
    const from = conn.wire.length;
    const execution = await conn.session.callTool(tool, args, {
        task: { preference: 'require' },
        ...(applicationContext ? { applicationContext } : {})
    });
    const statuses = [];
    const { outcome, lastTask } = await execution.settle({
        onEvent: event => {
            if (event.type === 'task') statuses.push(event.task.status);
        }
    });
    const created = conn.wire[from]?.result;
    return { execution, outcome, lastTask, statuses, created, from, taskId: execution.handle?.taskId };
}

// ---------------------------------------------------------------- scenarios

async function scenarioDiscover(conn) {
    const { client, session } = conn;
    const caps = client.getServerCapabilities() ?? {};
    const extension = caps.extensions?.[TASKS_EXTENSION];
    const discover = client.getDiscoverResult?.();
    const checks = {
        era: client.getProtocolEra() === 'modern',
        version: client.getNegotiatedProtocolVersion() === PROTOCOL,
        extensionIsEmptyObject: isDeepStrictEqual(extension, {}),
        sessionCanExecute: session.capabilities.execution === true,
        sessionCanCancel: session.capabilities.cancellation === true,
        sessionCanUpdate: session.capabilities.inputResponses === true
    };
    report('discover', Object.values(checks).every(Boolean), {
        checks,
        era: client.getProtocolEra(),
        protocolVersion: client.getNegotiatedProtocolVersion(),
        serverInfo: client.getServerVersion(),
        supportedVersions: discover?.supportedVersions,
        extensions: caps.extensions,
        sessionCapabilities: session.capabilities
    });
}

async function scenarioSyncTool(conn) {
    const from = conn.wire.length;
    const execution = await conn.session.callTool('greet', { name: 'x' });
    const outcome = await execution.result();
    const result = outcome.status === 'completed' ? outcome.result : undefined;
    const wire = conn.wire[from]?.result;
    const checks = {
        immediate: execution.kind === 'immediate',
        completed: outcome.status === 'completed',
        text: textOf(result) === 'Hello, x!',
        notAnError: result?.isError !== true,
        resultTypeComplete: wire?.resultType === 'complete'
    };
    report('sync-tool', Object.values(checks).every(Boolean), { checks, kind: execution.kind, result, wire });
}

async function scenarioTaskLifecycle(conn) {
    const r = await runTask(conn, 'slow_compute', { seconds: 1, label: 'lifecycle' });
    const result = r.outcome.status === 'completed' ? r.outcome.result : undefined;
    const final = lastGet(conn, r.from, r.taskId)?.result;
    const checks = {
        task: r.execution.kind === 'task' && typeof r.taskId === 'string',
        createdFlat: r.created?.resultType === 'task' && r.created?.taskId === r.taskId && r.created?.status === 'working',
        ttlMsPresent: r.created !== undefined && 'ttlMs' in r.created,
        sawWorking: r.statuses.includes('working'),
        completed: r.outcome.status === 'completed',
        text: textOf(result) === 'computed lifecycle after 1 s',
        notAnError: result?.isError === false,
        resultInlined: final?.status === 'completed' && final?.resultType === 'complete' && isDeepStrictEqual(withoutMeta(final?.result), withoutMeta(result)),
        noTasksResult: !conn.wire.slice(r.from).some(e => e.method === 'tasks/result')
    };
    report('task-lifecycle', Object.values(checks).every(Boolean), {
        checks,
        taskId: r.taskId,
        created: r.created,
        statuses: r.statuses,
        result,
        finalGet: final
    });
}

async function scenarioToolError(conn) {
    const r = await runTask(conn, 'failing_job', {});
    const result = r.outcome.status === 'completed' ? r.outcome.result : undefined;
    const final = lastGet(conn, r.from, r.taskId)?.result;
    const checks = {
        task: r.execution.kind === 'task',
        completed: r.outcome.status === 'completed',
        isError: result?.isError === true,
        wireCompleted: final?.status === 'completed' && final?.result?.isError === true && final?.error === undefined
    };
    report('tool-error', Object.values(checks).every(Boolean), {
        checks,
        taskId: r.taskId,
        outcome: r.outcome.status,
        result,
        error: r.outcome.status === 'failed' ? errInfo(r.outcome.error) : undefined,
        finalGet: final
    });
}

async function scenarioProtocolError(conn) {
    const r = await runTask(conn, 'protocol_error_job', {});
    const final = lastGet(conn, r.from, r.taskId)?.result;
    const error = r.outcome.status === 'failed' ? r.outcome.error : undefined;
    const checks = {
        task: r.execution.kind === 'task',
        failed: r.outcome.status === 'failed',
        errorCode: error?.code === -32603,
        wireFailed: final?.status === 'failed' && typeof final?.error?.code === 'number' && typeof final?.error?.message === 'string',
        noResult: final?.result === undefined
    };
    report('protocol-error', Object.values(checks).every(Boolean), {
        checks,
        taskId: r.taskId,
        outcome: r.outcome.status,
        error: errInfo(error),
        finalGet: final
    });
}

async function scenarioInput(conn) {
    const asked = [];
    const r = await runTask(conn, 'confirm_delete', { filename: 'notes.txt' }, {
        onInput: async (request, context) => {
            asked.push({ kind: request.kind, inputId: context.inputId, delivery: context.delivery, message: request.params?.message });
            return { action: 'accept', content: { confirm: true } };
        }
    });
    const result = r.outcome.status === 'completed' ? r.outcome.result : undefined;
    const updates = wireFor(conn, r.from, r.taskId).filter(e => e.method === 'tasks/update');
    const checks = {
        task: r.execution.kind === 'task',
        sawInputRequired: r.statuses.includes('input_required'),
        askedOnce: asked.length === 1 && asked[0].kind === 'elicitation' && asked[0].inputId === 'confirm' && asked[0].delivery === 'task-update',
        updated: updates.length === 1 && updates[0].params?.inputResponses?.confirm?.action === 'accept' && updates[0].result?.resultType === 'complete',
        completed: r.outcome.status === 'completed',
        text: textOf(result) === 'Deleted notes.txt'
    };
    report('input', Object.values(checks).every(Boolean), {
        checks,
        taskId: r.taskId,
        statuses: r.statuses,
        asked,
        updates: updates.map(u => ({ params: u.params?.inputResponses, result: u.result, error: u.error })),
        result
    });
}

async function scenarioPartialInput(conn) {
    const { session } = conn;
    const from = conn.wire.length;
    // Created through ext-tasks, then detached at once: nothing answers until told to.
    const execution = await session.callTool('multi_input', {}, { task: { preference: 'require' } });
    const reference = execution.serializeReference();
    await execution.detach();
    await withTimeout(execution.result(), 5000, 'detached execution settles').catch(() => {});
    const taskId = execution.handle.taskId;
    const controller = session.task(taskId);
    const openKeys = view => Object.keys(view.raw?.inputRequests ?? {}).sort();
    const before = await pollUntil(controller, v => v.status === 'input_required' || TERMINAL.has(v.status), 'multi_input asks');
    await controller.update({ first: { action: 'accept', content: { name: 'Ada' } } });
    // The answer moves the task back to working; it then asks again, for `second` only.
    const after = await pollUntil(controller, v => (v.status === 'input_required' && !openKeys(v).includes('first')) || TERMINAL.has(v.status), 'multi_input asks again');
    // Resumed under ext-tasks' driver, which answers what is still open.
    const asked = [];
    const resumed = await session.resumeTask(reference, {
        applicationContext: {
            onInput: async (request, context) => {
                asked.push(context.inputId);
                return { action: 'accept', content: { name: 'Grace' } };
            }
        }
    });
    const { outcome } = await resumed.settle();
    const result = outcome.status === 'completed' ? outcome.result : undefined;
    const updates = wireFor(conn, from, taskId).filter(e => e.method === 'tasks/update');
    const checks = {
        askedBoth: before.status === 'input_required' && isDeepStrictEqual(openKeys(before), ['first', 'second']),
        secondStillOpen: after.status === 'input_required' && isDeepStrictEqual(openKeys(after), ['second']),
        driverAnsweredOnlySecond: isDeepStrictEqual(asked, ['second']),
        twoUpdates: updates.length === 2 && updates.every(u => u.result?.resultType === 'complete'),
        completed: outcome.status === 'completed',
        text: textOf(result) === 'got Ada and Grace'
    };
    report('partial-input', Object.values(checks).every(Boolean), {
        checks,
        taskId,
        openBefore: openKeys(before),
        openAfterFirst: openKeys(after),
        statusAfterFirst: after.status,
        driverAsked: asked,
        updates: updates.map(u => ({ inputResponses: u.params?.inputResponses, result: u.result, error: u.error })),
        result
    });
}

async function scenarioCancel(conn) {
    const { session } = conn;
    const from = conn.wire.length;
    const execution = await session.callTool('slow_compute', { seconds: 60, label: 'cancel' }, { task: { preference: 'require' } });
    const taskId = execution.handle.taskId;
    await execution.cancel(); // tasks/cancel through the owning execution
    const local = await withTimeout(execution.result(), 5000, 'local outcome after cancel');
    const controller = session.task(taskId);
    const view = await pollUntil(controller, v => TERMINAL.has(v.status), 'cancelled task turns terminal');
    const again = await attempt(() => controller.cancel()); // tasks/cancel on a terminal task
    const viewAgain = await controller.snapshot();
    const acks = wireFor(conn, from, taskId).filter(e => e.method === 'tasks/cancel');
    const checks = {
        localCancelled: local.status === 'cancelled',
        serverCancelled: view.status === 'cancelled',
        secondCancelAcked: !again.threw,
        twoAcks: acks.length === 2 && acks.every(a => a.result?.resultType === 'complete'),
        sameAck: acks.length === 2 && isDeepStrictEqual(withoutMeta(acks[0].result), withoutMeta(acks[1].result)),
        stillCancelled: viewAgain.status === 'cancelled'
    };
    report('cancel', Object.values(checks).every(Boolean), {
        checks,
        taskId,
        localOutcome: local.status,
        serverStatus: view.status,
        acks: acks.map(a => ({ status: a.status, result: a.result, error: a.error })),
        secondCancel: again.threw ? again.error : 'acknowledged'
    });
}

function fakeIdLike(realId) {
    const hex = '0123456789abcdef';
    let out = '';
    for (const ch of realId) out += /[0-9a-f]/.test(ch) ? hex[randomBytes(1)[0] & 15] : ch;
    return out === realId ? fakeIdLike(realId) : out;
}

async function scenarioOtherToken(conn) {
    const other = await connect('B', opts.otherToken);
    let taskId;
    try {
        const execution = await conn.session.callTool('slow_compute', { seconds: 60, label: 'private' }, { task: { preference: 'require' } });
        taskId = execution.handle.taskId;
        await execution.detach();
        const fakeId = fakeIdLike(taskId);
        const ops = {
            'tasks/get': c => c.snapshot(),
            'tasks/update': c => c.update({ anything: { action: 'decline' } }),
            'tasks/cancel': c => c.cancel()
        };
        const cmp = {};
        let ok = true;
        for (const [op, fn] of Object.entries(ops)) {
            const notYours = await attempt(() => fn(other.session.task(taskId)));
            const madeUp = await attempt(() => fn(other.session.task(fakeId)));
            const rejected = notYours.threw && notYours.raw instanceof JsonRpcResponseError && notYours.error.code === -32602;
            const identical = notYours.threw && madeUp.threw && isDeepStrictEqual(notYours.error, madeUp.error);
            cmp[op] = { notYours: notYours.threw ? notYours.error : { unexpected: notYours.result }, madeUp: madeUp.threw ? madeUp.error : { unexpected: madeUp.result }, rejected, identical };
            ok = ok && rejected && identical;
        }
        const owner = await conn.session.task(taskId).snapshot();
        ok = ok && owner.status === 'working';
        report('other-token', ok, { taskId, fakeId, ops: cmp, ownerStillSees: owner.status });
    } finally {
        if (taskId) await conn.session.task(taskId).cancel().catch(() => {});
        await disconnect(other);
    }
}

// ---------------------------------------------------------------- main

async function main() {
    let conn;
    try {
        conn = await connect('A', opts.token);
    } catch (e) {
        report('discover', false, { error: errInfo(e), stage: 'connect' });
        return;
    }
    const steps = [
        ['discover', scenarioDiscover],
        ['sync-tool', scenarioSyncTool],
        ['task-lifecycle', scenarioTaskLifecycle],
        ['tool-error', scenarioToolError],
        ['protocol-error', scenarioProtocolError],
        ['input', scenarioInput],
        ['partial-input', scenarioPartialInput],
        ['cancel', scenarioCancel]
    ];
    if (opts.otherToken) steps.push(['other-token', scenarioOtherToken]);
    for (const [name, fn] of steps) {
        try {
            await withTimeout(fn(conn), SCENARIO_TIMEOUT_MS, name);
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

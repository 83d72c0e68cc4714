#!/usr/bin/env node
// Reference MCP 2025-11-25 task server built only from @modelcontextprotocol/sdk 1.32.2:
// McpServer + InMemoryTaskStore + StreamableHTTPServerTransport (stateful sessions) on
// Node's http module. It is the baseline for bench.mjs and a sanity target for client.mjs.
//
//   node reference-server.mjs --port 8931 [--host 127.0.0.1] [--sse]
//                             [--default-delay-ms 2000] [--poll-interval-ms N] [--quiet]
//   node reference-server.mjs --stdio [...]   (same server over stdio, tasks.list not declared,
//                                              as tasklatch does over stdio; for client.mjs stdio self-tests)
//
// Tools (mirroring tasklatch's tool list):
//   export  taskSupport optional  {name, rows?, delay_ms?}  completes after delay_ms
//   archive taskSupport required  {items?}                  completes immediately
//   echo    taskSupport forbidden {text}                    synchronous
//
// There is no authentication: an Authorization header is accepted and ignored. Tasks are
// scoped by MCP session (that is what InMemoryTaskStore does with the transport sessionId).
// By default responses are JSON (enableJsonResponse), as tasklatch answers; --sse switches
// to the SDK's default of answering every POST with an SSE stream.
// Prints "listening <port>" on stdout once ready.

import http from 'node:http';
import { randomUUID } from 'node:crypto';
import * as z from 'zod/v4';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { InMemoryTaskStore, InMemoryTaskMessageQueue } from '@modelcontextprotocol/sdk/experimental/tasks';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';

function parseArgs(argv) {
    const opts = { port: 0, host: '127.0.0.1', stdio: false, sse: false, defaultDelayMs: 2000, pollIntervalMs: undefined, quiet: false };
    for (let i = 0; i < argv.length; i++) {
        const a = argv[i];
        const next = () => {
            if (i + 1 >= argv.length) throw new Error(`missing value for ${a}`);
            return argv[++i];
        };
        switch (a) {
            case '--port': opts.port = Number(next()); break;
            case '--host': opts.host = next(); break;
            case '--sse': opts.sse = true; break;
            case '--stdio': opts.stdio = true; break;
            case '--default-delay-ms': opts.defaultDelayMs = Number(next()); break;
            case '--poll-interval-ms': opts.pollIntervalMs = Number(next()); break;
            case '--quiet': opts.quiet = true; break;
            case '-h': case '--help':
                console.log('usage: node reference-server.mjs --port PORT [--host 127.0.0.1] [--sse] [--default-delay-ms 2000] [--poll-interval-ms N] [--quiet] | --stdio');
                process.exit(0);
            default: throw new Error(`unknown argument ${a}`);
        }
    }
    if (!Number.isInteger(opts.port) || opts.port < 0 || opts.port > 65535) throw new Error('--port must be 0..65535');
    return opts;
}

let opts;
try {
    opts = parseArgs(process.argv.slice(2));
} catch (e) {
    console.error(`reference-server: ${e.message}`);
    process.exit(2);
}
const log = (...a) => { if (!opts.quiet) console.error('[reference-server]', ...a); };

// One store for the whole process; InMemoryTaskStore scopes each task to the session that created it.
const taskStore = new InMemoryTaskStore();
const TASKS_CAPABILITY = opts.stdio
    ? { cancel: {}, requests: { tools: { call: {} } } }
    : { list: {}, cancel: {}, requests: { tools: { call: {} } } };
const sleep = ms => new Promise(r => setTimeout(r, ms));

function buildServer() {
    const server = new McpServer(
        { name: 'tasklatch-ts-reference', version: '1.32.2-ref' },
        {
            capabilities: { tools: {}, tasks: TASKS_CAPABILITY },
            taskStore,
            taskMessageQueue: new InMemoryTaskMessageQueue()
        }
    );

    // Finish a task unless it was cancelled (or expired) meanwhile: the store refuses to
    // overwrite a terminal status, and we do not want that to surface as an error.
    async function finish(store, taskId, result) {
        try {
            const t = await store.getTask(taskId);
            if (t.status === 'completed' || t.status === 'failed' || t.status === 'cancelled') return;
            await store.storeTaskResult(taskId, 'completed', result);
        } catch (e) {
            log(`task ${taskId} not finished: ${e.message}`);
        }
    }

    server.experimental.tasks.registerToolTask(
        'export',
        {
            description: 'Long-running export (one export per task). Completes after delay_ms.',
            inputSchema: {
                name: z.string(),
                rows: z.number().int().min(0).optional(),
                delay_ms: z.number().int().min(0).optional()
            },
            execution: { taskSupport: 'optional' }
        },
        {
            async createTask({ name, rows, delay_ms }, { taskStore: store, taskRequestedTtl }) {
                const task = await store.createTask({ ttl: taskRequestedTtl, pollInterval: opts.pollIntervalMs });
                const delay = delay_ms ?? opts.defaultDelayMs;
                const n = rows ?? 100;
                (async () => {
                    await sleep(delay);
                    await finish(store, task.taskId, {
                        content: [{ type: 'text', text: `export "${name}" written: ${n} rows (export-${task.taskId})` }]
                    });
                })();
                return { task };
            },
            async getTask(_args, { taskId, taskStore: store }) {
                return await store.getTask(taskId);
            },
            async getTaskResult(_args, { taskId, taskStore: store }) {
                return await store.getTaskResult(taskId);
            }
        }
    );

    server.experimental.tasks.registerToolTask(
        'archive',
        {
            description: 'Short task; must be called as a task.',
            inputSchema: { items: z.array(z.string()).optional() },
            execution: { taskSupport: 'required' }
        },
        {
            async createTask({ items }, { taskStore: store, taskRequestedTtl }) {
                const task = await store.createTask({ ttl: taskRequestedTtl, pollInterval: opts.pollIntervalMs });
                const list = items ?? [];
                setImmediate(() => {
                    finish(store, task.taskId, {
                        content: [{ type: 'text', text: `archived ${list.length} item(s)` }]
                    });
                });
                return { task };
            },
            async getTask(_args, { taskId, taskStore: store }) {
                return await store.getTask(taskId);
            },
            async getTaskResult(_args, { taskId, taskStore: store }) {
                return await store.getTaskResult(taskId);
            }
        }
    );

    // registerTool gives execution.taskSupport 'forbidden'.
    server.registerTool(
        'echo',
        { description: 'Returns its text synchronously.', inputSchema: { text: z.string() } },
        async ({ text }) => ({ content: [{ type: 'text', text }] })
    );

    return server;
}

const sessions = new Map(); // sessionId -> transport

function sendJson(res, status, body) {
    if (res.headersSent) return;
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
}

function readBody(req) {
    return new Promise((resolve, reject) => {
        const chunks = [];
        let size = 0;
        req.on('data', c => {
            size += c.length;
            if (size > 4 * 1024 * 1024) {
                reject(new Error('body too large'));
                req.destroy();
                return;
            }
            chunks.push(c);
        });
        req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
        req.on('error', reject);
    });
}

async function handle(req, res) {
    const url = new URL(req.url, 'http://localhost');
    if (url.pathname !== '/mcp') {
        sendJson(res, 404, { error: 'not found' });
        return;
    }
    const sid = req.headers['mcp-session-id'];
    if (req.method === 'POST') {
        let body;
        try {
            body = JSON.parse(await readBody(req));
        } catch (e) {
            sendJson(res, 400, { jsonrpc: '2.0', id: null, error: { code: -32700, message: `Parse error: ${e.message}` } });
            return;
        }
        if (sid) {
            const transport = sessions.get(sid);
            if (!transport) {
                sendJson(res, 404, { jsonrpc: '2.0', id: null, error: { code: -32001, message: 'Session not found' } });
                return;
            }
            await transport.handleRequest(req, res, body);
            return;
        }
        if (!isInitializeRequest(body)) {
            sendJson(res, 400, { jsonrpc: '2.0', id: null, error: { code: -32000, message: 'Bad Request: No valid session ID provided' } });
            return;
        }
        const transport = new StreamableHTTPServerTransport({
            sessionIdGenerator: () => randomUUID(),
            enableJsonResponse: !opts.sse,
            onsessioninitialized: id => {
                sessions.set(id, transport);
            }
        });
        transport.onclose = () => {
            if (transport.sessionId) sessions.delete(transport.sessionId);
        };
        const server = buildServer();
        await server.connect(transport);
        await transport.handleRequest(req, res, body);
        return;
    }
    if (req.method === 'GET' || req.method === 'DELETE') {
        const transport = sid ? sessions.get(sid) : undefined;
        if (!sid) {
            sendJson(res, 400, { jsonrpc: '2.0', id: null, error: { code: -32000, message: 'Missing session ID' } });
            return;
        }
        if (!transport) {
            sendJson(res, 404, { jsonrpc: '2.0', id: null, error: { code: -32001, message: 'Session not found' } });
            return;
        }
        await transport.handleRequest(req, res);
        return;
    }
    res.writeHead(405, { allow: 'GET, POST, DELETE' });
    res.end();
}

if (opts.stdio) {
    const server = buildServer();
    await server.connect(new StdioServerTransport());
    log('serving on stdio');
} else {
    startHttp();
}

function startHttp() {
const httpServer = http.createServer((req, res) => {
    handle(req, res).catch(err => {
        log('error handling request:', err);
        sendJson(res, 500, { jsonrpc: '2.0', id: null, error: { code: -32603, message: 'Internal server error' } });
    });
});
httpServer.keepAliveTimeout = 65_000;

httpServer.listen(opts.port, opts.host, () => {
    const { port } = httpServer.address();
    process.stdout.write(`listening ${port}\n`);
    log(`MCP endpoint http://${opts.host}:${port}/mcp (${opts.sse ? 'SSE' : 'JSON'} responses)`);
});
process.on('SIGINT', () => shutdown(httpServer));
process.on('SIGTERM', () => shutdown(httpServer));
}

async function shutdown(httpServer) {
    for (const t of sessions.values()) {
        await t.close().catch(() => {});
    }
    taskStore.cleanup();
    httpServer.close();
    process.exit(0);
}

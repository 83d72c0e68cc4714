// A durable task store for the TypeScript MCP SDK 1.x (`TaskStore` of
// `@modelcontextprotocol/sdk/experimental/tasks`), on SQLite: what `tasklatch check-store
// --node` shows a TypeScript team, checked in CI.
//
//   tasklatch check-store --node examples/stores/node/sqlite-task-store.mjs --durable
//
// SQLite is Node's built-in `node:sqlite` where the runtime has it (22.5 and later), else
// `better-sqlite3` (this directory's package.json; `npm ci` here). Each write is one
// `BEGIN IMMEDIATE` transaction that reads the row, checks the contract's rules and writes:
// a task belongs to the session that created it (none: to callers without one), a terminal
// task takes no write, a result is stored once, an expired task is gone (read or written,
// never revived), a status is one of the five, a TTL is kept to a day at most. Its clock is
// `Date.now()`, which tasklatch's shim replaces with one it moves.
//
// The broken variants are the same store with one guard weakened, each an export here:
//   createStoreWithoutSessionFilter   a call without a session reaches every task, as the
//                                     SDK's in-memory store lets it
//   createStoreCheckOutsideTransaction  reads the status, yields, then writes: two writers
//                                     both see `working` and both end the task
//   createStoreLazyExpiry             purges expired tasks only on create and list: a late
//                                     write lands on an expired task

import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';

const STATUSES = ['working', 'input_required', 'completed', 'failed', 'cancelled'];
const TERMINAL = ['completed', 'failed', 'cancelled'];
const TTL_MS_MAX = 24 * 60 * 60 * 1000;
const PAGE_SIZE = 10;
const POLL_INTERVAL_MS = 1000;

async function openDatabase(path) {
  try {
    const { DatabaseSync } = await import('node:sqlite');
    return new DatabaseSync(path);
  } catch {
    const { default: Database } = await import('better-sqlite3');
    return new Database(path);
  }
}

const isTerminal = (status) => TERMINAL.includes(status);
const iso = (ms) => new Date(ms).toISOString();

export class SqliteTaskStore {
  static async open({ dir = '.', sessionFilter = true, checkInTransaction = true, eagerExpiry = true } = {}) {
    mkdirSync(dir, { recursive: true });
    const db = await openDatabase(join(dir, 'tasks.db'));
    db.exec('PRAGMA journal_mode = WAL');
    db.exec('PRAGMA synchronous = FULL');
    db.exec(`CREATE TABLE IF NOT EXISTS tasks (
      seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, owner TEXT,
      status TEXT NOT NULL, message TEXT, created_ms INTEGER NOT NULL, updated_ms INTEGER NOT NULL,
      ttl_ms INTEGER, expires_ms INTEGER, poll_ms INTEGER, result TEXT)`);
    return new SqliteTaskStore(db, { sessionFilter, checkInTransaction, eagerExpiry });
  }

  constructor(db, options) {
    this.db = db;
    this.options = options;
  }

  transaction(body) {
    this.db.exec('BEGIN IMMEDIATE');
    try {
      const value = body();
      this.db.exec('COMMIT');
      return value;
    } catch (error) {
      this.db.exec('ROLLBACK');
      throw error;
    }
  }

  // The row of `taskId` this caller may reach, live; `purge` deletes it if expired.
  reach(taskId, sessionId, purge) {
    const row = this.db.prepare('SELECT * FROM tasks WHERE id = ?').get(taskId);
    if (!row) return undefined;
    const owner = row.owner ?? undefined;
    const mine = owner === (sessionId ?? undefined) || (!this.options.sessionFilter && sessionId === undefined);
    if (!mine) return undefined;
    if (purge && row.expires_ms !== null && row.expires_ms <= Date.now()) {
      this.db.prepare('DELETE FROM tasks WHERE id = ?').run(taskId);
      return undefined;
    }
    return row;
  }

  static task(row) {
    const task = {
      taskId: row.id, status: row.status, ttl: row.ttl_ms,
      createdAt: iso(row.created_ms), lastUpdatedAt: iso(row.updated_ms), pollInterval: row.poll_ms,
    };
    if (row.message !== null) task.statusMessage = row.message;
    return task;
  }

  // One write: the caller's live row checked, then written, in one transaction (or, in
  // the broken variant, checked, a turn yielded, and written in a second one).
  async write(taskId, sessionId, check, write) {
    const read = () => {
      const row = this.reach(taskId, sessionId, this.options.eagerExpiry);
      if (!row) throw new Error(`Task with ID ${taskId} not found`);
      check(row);
      return row;
    };
    if (this.options.checkInTransaction) {
      this.transaction(() => write(read()));
      return;
    }
    const row = read();
    await new Promise((resolve) => setImmediate(resolve));
    this.transaction(() => write(row));
  }

  async createTask(taskParams, requestId, request, sessionId) {
    const now = Date.now();
    const asked = taskParams?.ttl;
    const ttl = typeof asked === 'number' ? Math.max(0, Math.min(asked, TTL_MS_MAX)) : null;
    const id = randomBytes(16).toString('hex');
    return this.transaction(() => {
      this.db.prepare('DELETE FROM tasks WHERE expires_ms IS NOT NULL AND expires_ms <= ?').run(now);
      this.db.prepare(`INSERT INTO tasks (id, owner, status, created_ms, updated_ms, ttl_ms, expires_ms, poll_ms)
        VALUES (?, ?, 'working', ?, ?, ?, ?, ?)`)
        .run(id, sessionId ?? null, now, now, ttl, ttl === null ? null : now + ttl, taskParams?.pollInterval ?? POLL_INTERVAL_MS);
      return SqliteTaskStore.task(this.db.prepare('SELECT * FROM tasks WHERE id = ?').get(id));
    });
  }

  async getTask(taskId, sessionId) {
    const row = this.reach(taskId, sessionId, true);
    return row ? SqliteTaskStore.task(row) : null;
  }

  async updateTaskStatus(taskId, status, statusMessage, sessionId) {
    if (!STATUSES.includes(status)) throw new Error(`Unknown status ${JSON.stringify(status)}`);
    await this.write(taskId, sessionId, (row) => {
      if (isTerminal(row.status)) throw new Error(`Cannot update task ${taskId}: it is ${row.status}`);
    }, (row) => {
      this.db.prepare('UPDATE tasks SET status = ?, message = ?, updated_ms = ? WHERE id = ?')
        .run(status, statusMessage ?? row.message, Date.now(), taskId);
    });
  }

  async storeTaskResult(taskId, status, result, sessionId) {
    if (status !== 'completed' && status !== 'failed') throw new Error(`Not a result status: ${status}`);
    await this.write(taskId, sessionId, (row) => {
      if (isTerminal(row.status)) throw new Error(`Cannot store a result for task ${taskId}: it is ${row.status}`);
    }, () => {
      this.db.prepare('UPDATE tasks SET status = ?, result = ?, updated_ms = ? WHERE id = ?')
        .run(status, JSON.stringify(result), Date.now(), taskId);
    });
  }

  async getTaskResult(taskId, sessionId) {
    const row = this.reach(taskId, sessionId, true);
    if (!row) throw new Error(`Task with ID ${taskId} not found`);
    if (!isTerminal(row.status) || row.result === null) throw new Error(`Task ${taskId} has no result stored`);
    return JSON.parse(row.result);
  }

  async listTasks(cursor, sessionId) {
    return this.transaction(() => {
      this.db.prepare('DELETE FROM tasks WHERE expires_ms IS NOT NULL AND expires_ms <= ?').run(Date.now());
      let after = 0;
      if (cursor !== undefined) {
        const found = this.db.prepare('SELECT seq FROM tasks WHERE id = ?').get(cursor);
        if (!found) throw new Error(`Invalid cursor: ${cursor}`);
        after = found.seq;
      }
      const rows = this.db.prepare('SELECT * FROM tasks WHERE seq > ? ORDER BY seq').all(after)
        .filter((row) => (row.owner ?? undefined) === (sessionId ?? undefined)
          || (!this.options.sessionFilter && sessionId === undefined));
      const page = rows.slice(0, PAGE_SIZE);
      const nextCursor = rows.length > PAGE_SIZE ? page[page.length - 1].id : undefined;
      return { tasks: page.map(SqliteTaskStore.task), nextCursor };
    });
  }

  cleanup() {
    this.db.close();
  }
}

export const createStore = (options) => SqliteTaskStore.open(options);
export const createStoreWithoutSessionFilter = (options) => SqliteTaskStore.open({ ...options, sessionFilter: false });
export const createStoreCheckOutsideTransaction = (options) => SqliteTaskStore.open({ ...options, checkInTransaction: false });
export const createStoreLazyExpiry = (options) => SqliteTaskStore.open({ ...options, eagerExpiry: false });

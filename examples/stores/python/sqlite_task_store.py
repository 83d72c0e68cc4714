"""A durable task store for the Python MCP SDK (`mcp` 1.x), on the standard library's
sqlite3: what `tasklatch check-store --python` shows a Python team, checked in CI.

    tasklatch check-store --python examples/stores/python/sqlite_task_store.py:create_store --durable

Each write is one `BEGIN IMMEDIATE` transaction that reads the row, checks the contract's
rules and writes: a terminal task takes no write (its status, message and result are
final), a result is stored once, a cancel drops a result stored before it (the interface
stores a completion's result and its status in two calls), an expired task is gone (read
or written, never revived), a status is one of the five. Its clock is `datetime.now(timezone.utc)`, which tasklatch's
shim replaces with one it moves.

The broken variants are the same store with one guard weakened, each a factory here:
  create_store_check_outside_transaction  reads the status in one transaction and writes
                                          in another (two writers both see `working`)
  create_store_lazy_expiry                purges expired tasks only on create and list,
                                          as the SDK's in-memory store does: a late write
                                          revives an expired task
"""

import asyncio
import os
import sqlite3
from datetime import datetime, timedelta, timezone

from mcp.shared.experimental.tasks.store import TaskStore
from mcp.types import Result, Task, TaskMetadata

STATUSES = ("working", "input_required", "completed", "failed", "cancelled")
TERMINAL = ("completed", "failed", "cancelled")
POLL_INTERVAL_MS = 500

SCHEMA = """
CREATE TABLE IF NOT EXISTS tasks (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    status TEXT NOT NULL,
    message TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    ttl_ms INTEGER,
    expires_at TEXT,
    result TEXT
)
"""


class SqliteTaskStore(TaskStore):
    def __init__(self, path, page_size=10, check_in_transaction=True, eager_expiry=True):
        self.path = path
        self.page_size = page_size
        self.check_in_transaction = check_in_transaction
        self.eager_expiry = eager_expiry
        self.db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        self.db.execute(SCHEMA)
        self.counter = self.db.execute("SELECT COUNT(*) FROM tasks").fetchone()[0]

    # -- helpers ---------------------------------------------------------------------

    def _now(self):
        return datetime.now(timezone.utc)

    def _begin(self):
        self.db.execute("BEGIN IMMEDIATE")

    def _commit(self):
        self.db.execute("COMMIT")

    def _rollback(self):
        if self.db.in_transaction:
            self.db.execute("ROLLBACK")

    def _purge(self):
        self.db.execute("DELETE FROM tasks WHERE expires_at IS NOT NULL AND expires_at <= ?",
                        (self._now().isoformat(),))

    def _row(self, task_id, purge):
        """The live row of `task_id`, or None; `purge` deletes it if it has expired."""
        row = self.db.execute(
            "SELECT id, status, message, created_at, updated_at, ttl_ms, expires_at, result "
            "FROM tasks WHERE id = ?", (task_id,)).fetchone()
        if row is None:
            return None
        if purge and row[6] is not None and row[6] <= self._now().isoformat():
            self.db.execute("DELETE FROM tasks WHERE id = ?", (task_id,))
            return None
        return row

    @staticmethod
    def _task(row):
        return Task(taskId=row[0], status=row[1], statusMessage=row[2],
                    createdAt=datetime.fromisoformat(row[3]),
                    lastUpdatedAt=datetime.fromisoformat(row[4]),
                    ttl=row[5], pollInterval=POLL_INTERVAL_MS)

    def _write(self, task_id, check, write):
        """One write: read the live row, `check` it (raises to refuse), `write` it."""
        if self.check_in_transaction:
            self._begin()
            try:
                row = self._row(task_id, purge=self.eager_expiry)
                if row is None:
                    raise ValueError("Task with ID %s not found" % task_id)
                check(row)
                write(row)
                self._commit()
            except BaseException:
                self._rollback()
                raise
            return
        # The broken variant: the check's read and the write are two transactions.
        row = self._row(task_id, purge=self.eager_expiry)
        if row is None:
            raise ValueError("Task with ID %s not found" % task_id)
        check(row)
        self._write_later(row, write)

    def _write_later(self, row, write):
        self._begin()
        try:
            write(row)
            self._commit()
        except BaseException:
            self._rollback()
            raise

    # -- the interface ---------------------------------------------------------------

    async def create_task(self, metadata: TaskMetadata, task_id: str | None = None) -> Task:
        now = self._now()
        self._begin()
        try:
            self._purge()
            self.counter += 1
            task_id = task_id or "task-%d-%s" % (self.counter, os.urandom(6).hex())
            ttl = metadata.ttl
            expires = (now + timedelta(milliseconds=ttl)).isoformat() if ttl is not None else None
            self.db.execute(
                "INSERT INTO tasks (id, status, created_at, updated_at, ttl_ms, expires_at) "
                "VALUES (?, 'working', ?, ?, ?, ?)",
                (task_id, now.isoformat(), now.isoformat(), ttl, expires))
            row = self._row(task_id, purge=False)
            self._commit()
        except BaseException:
            self._rollback()
            raise
        return self._task(row)

    async def get_task(self, task_id: str) -> Task | None:
        row = self._row(task_id, purge=True)
        return None if row is None else self._task(row)

    async def update_task(self, task_id: str, status=None, status_message=None) -> Task:
        if status is not None and status not in STATUSES:
            raise ValueError("Unknown status %r" % status)

        def check(row):
            if row[1] in TERMINAL:
                raise ValueError("Cannot update task %s: it is %s" % (task_id, row[1]))

        def write(row):
            # A cancel wins over a completion whose result landed first: the task keeps
            # no payload of work it was told was cancelled.
            self.db.execute(
                "UPDATE tasks SET status = ?, message = ?, updated_at = ?, "
                "result = CASE WHEN ? = 'cancelled' THEN NULL ELSE result END WHERE id = ?",
                (status or row[1], status_message if status_message is not None else row[2],
                 self._now().isoformat(), status, task_id))

        if not self.check_in_transaction:
            # Give another writer its turn between the check and the write.
            row = self._row(task_id, purge=self.eager_expiry)
            if row is None:
                raise ValueError("Task with ID %s not found" % task_id)
            check(row)
            await asyncio.sleep(0)
            self._write_later(row, write)
        else:
            self._write(task_id, check, write)
        return self._task(self._row(task_id, purge=False))

    async def store_result(self, task_id: str, result: Result) -> None:
        def check(row):
            if row[1] in TERMINAL:
                raise ValueError("Cannot store a result for task %s: it is %s" % (task_id, row[1]))
            if row[7] is not None:
                raise ValueError("Task %s already has a result" % task_id)

        def write(row):
            self.db.execute("UPDATE tasks SET result = ? WHERE id = ?",
                            (result.model_dump_json(by_alias=True, exclude_none=True), task_id))

        self._write(task_id, check, write)

    async def get_result(self, task_id: str) -> Result | None:
        row = self._row(task_id, purge=True)
        if row is None or row[1] not in ("completed", "failed") or row[7] is None:
            return None
        return Result.model_validate_json(row[7])

    async def list_tasks(self, cursor: str | None = None) -> tuple[list[Task], str | None]:
        self._begin()
        try:
            self._purge()
            after = 0
            if cursor is not None:
                found = self.db.execute("SELECT seq FROM tasks WHERE id = ?", (cursor,)).fetchone()
                if found is None:
                    raise ValueError("Invalid cursor: %s" % cursor)
                after = found[0]
            rows = self.db.execute(
                "SELECT id, status, message, created_at, updated_at, ttl_ms, expires_at, result "
                "FROM tasks WHERE seq > ? ORDER BY seq LIMIT ?", (after, self.page_size + 1)).fetchall()
            self._commit()
        except BaseException:
            self._rollback()
            raise
        page = rows[:self.page_size]
        next_cursor = page[-1][0] if len(rows) > self.page_size else None
        return [self._task(row) for row in page], next_cursor

    async def delete_task(self, task_id: str) -> bool:
        return self.db.execute("DELETE FROM tasks WHERE id = ?", (task_id,)).rowcount > 0

    async def wait_for_update(self, task_id: str) -> None:
        await asyncio.sleep(0.05)

    async def notify_update(self, task_id: str) -> None:
        return None

    def close(self):
        self.db.close()


def _path(dir):
    os.makedirs(dir or ".", exist_ok=True)
    return os.path.join(dir or ".", "tasks.db")


def create_store(dir=None):
    return SqliteTaskStore(_path(dir))


def create_store_check_outside_transaction(dir=None):
    return SqliteTaskStore(_path(dir), check_in_transaction=False)


def create_store_lazy_expiry(dir=None):
    return SqliteTaskStore(_path(dir), eager_expiry=False)

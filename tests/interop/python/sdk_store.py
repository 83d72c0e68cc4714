"""The Python SDK mcp 1.30.0's own `InMemoryTaskStore`, as `tasklatch check-store --python`
loads it (tests/it/check_store_sdk.rs): the factory makes a fresh one per case."""

from mcp.shared.experimental.tasks.in_memory_task_store import InMemoryTaskStore


def create_store():
    return InMemoryTaskStore()

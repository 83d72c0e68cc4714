// The TypeScript SDK 1.32.2's own `InMemoryTaskStore`, as `tasklatch check-store --node`
// loads it (tests/it/check_store_sdk.rs): the factory makes a fresh one per case.
import { InMemoryTaskStore } from '@modelcontextprotocol/sdk/experimental/tasks';

export function createStore() {
  return new InMemoryTaskStore();
}

//! The queue contract: at-least-once delivery with leases, redelivery after lease expiry,
//! acks and nacks fenced to the current delivery, a bounded capacity.
// Plain builds only: the README's second test command (`--all-features`) runs what the
// features add (the engines), not these again.
#![cfg(not(feature = "mutants"))]

use tasklatch::runtime::{MemoryQueue, Message, Queue, QueueError};
use tasklatch::store::WrappedRequest;

fn message(task_id: &str) -> Message {
    Message {
        task_id: task_id.into(),
        auth_key: "tenant-a/alice".into(),
        request: WrappedRequest {
            method: "tools/call".into(),
            name: "export".into(),
            arguments: None,
        },
        outbox_attempt: 1,
    }
}

#[test]
fn leases_redeliver_and_fence_acks() {
    let queue = MemoryQueue::new(10);
    queue.publish(message("a"), 0).unwrap();
    queue.publish(message("b"), 0).unwrap();
    let first = queue.receive(10, 100).unwrap().unwrap();
    assert_eq!(
        (first.message.task_id.as_str(), first.receipt.delivery),
        ("a", 1)
    );
    let second = queue.receive(10, 100).unwrap().unwrap();
    assert_eq!(
        second.message.task_id, "b",
        "a leased message is not handed out twice"
    );
    assert_eq!(queue.receive(109, 100).unwrap(), None);
    let again = queue.receive(110, 100).unwrap().unwrap();
    assert_eq!(
        (again.message.task_id.as_str(), again.receipt.delivery),
        ("a", 2),
        "redelivered at lease expiry"
    );
    assert!(
        !queue.ack(first.receipt).unwrap(),
        "a stale delivery cannot ack"
    );
    assert!(queue.ack(again.receipt).unwrap());
    assert!(!queue.ack(again.receipt).unwrap(), "ack is once");
    assert!(queue.nack(second.receipt, 500).unwrap());
    assert_eq!(queue.receive(499, 100).unwrap(), None, "nacked until 500");
    assert_eq!(
        queue.receive(500, 100).unwrap().unwrap().receipt.delivery,
        2
    );
    assert_eq!(queue.len().unwrap(), 1);
}

#[test]
fn capacity_is_bounded() {
    let queue = MemoryQueue::new(2);
    queue.publish(message("a"), 0).unwrap();
    queue.publish(message("b"), 0).unwrap();
    assert_eq!(
        queue.publish(message("c"), 0),
        Err(QueueError::Full { capacity: 2 })
    );
}

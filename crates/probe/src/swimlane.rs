//! The workload drawn as an SVG swimlane: a lane per client, each operation a bar from its
//! invocation to its completion (coloured by what it did; unanswered ones hatched red),
//! and a lane for the server with the kills as red bands from SIGKILL to ready. Operations
//! a finding cites are outlined in red.

use super::CheckOutcome;
use super::workload::{Kill, Op, OpKind};
use crate::report::xml_escape;
use std::collections::BTreeSet;
use std::fmt::Write as _;

/// Operations drawn at most (a long run's picture stays a few megabytes).
pub const OPS_DRAWN_MAX: usize = 20_000;
const LABEL_WIDTH: f64 = 150.0;
const PLOT_WIDTH: f64 = 1400.0;
const LANE_HEIGHT: f64 = 22.0;
const TOP: f64 = 40.0;

fn colour(kind: OpKind) -> &'static str {
    match kind {
        OpKind::Create => "#2b8a3e",
        OpKind::Get => "#1971c2",
        OpKind::Result => "#7048e8",
        OpKind::Cancel => "#e67700",
        OpKind::List => "#0c8599",
        OpKind::ForeignGet => "#c2255c",
        OpKind::Settle => "#868e96",
        OpKind::Update => "#5f3dc4",
    }
}

/// Where times and lanes fall on the drawing.
struct Frame {
    start_ms: u64,
    end_ms: u64,
}

impl Frame {
    fn x(&self, ms: u64) -> f64 {
        LABEL_WIDTH
            + PLOT_WIDTH * (ms.saturating_sub(self.start_ms)) as f64
                / (self.end_ms - self.start_ms) as f64
    }

    fn lane_y(index: usize) -> f64 {
        TOP + LANE_HEIGHT * index as f64
    }
}

/// The SVG of one era's workload; `checks` are that era's outcomes (their evidence is
/// highlighted).
pub fn render(era: &str, ops: &[Op], kills: &[Kill], checks: &[CheckOutcome]) -> String {
    let clients: BTreeSet<(usize, &str)> = ops
        .iter()
        .map(|op| (op.client, op.identity.as_str()))
        .collect();
    let lanes: Vec<(usize, &str)> = clients.into_iter().collect();
    let start_ms = ops
        .iter()
        .map(|op| op.exchange.invoked_ms)
        .min()
        .unwrap_or(0);
    let end_ms = ops
        .iter()
        .map(|op| op.exchange.completed_ms)
        .chain(kills.iter().map(|kill| kill.ready_ms))
        .max()
        .unwrap_or(start_ms)
        .max(start_ms + 1);
    let frame = Frame { start_ms, end_ms };
    let height = TOP + LANE_HEIGHT * (lanes.len() + 1) as f64 + 40.0;
    let width = LABEL_WIDTH + PLOT_WIDTH + 20.0;
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0}\" height=\"{height:.0}\" \
         viewBox=\"0 0 {width:.0} {height:.0}\" font-family=\"monospace\" font-size=\"11\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n\
         <text x=\"10\" y=\"20\" font-size=\"13\">tasklatch probe workload, {era}: {} operations \
         over {:.1} s, {} kill(s)</text>",
        ops.len(),
        (end_ms - start_ms) as f64 / 1000.0,
        kills.len()
    );
    for (index, (client, identity)) in lanes.iter().enumerate() {
        let _ = writeln!(
            svg,
            "<text x=\"10\" y=\"{:.1}\">client {client} ({})</text>",
            Frame::lane_y(index) + 15.0,
            xml_escape(identity)
        );
    }
    let server_y = Frame::lane_y(lanes.len());
    let _ = writeln!(
        svg,
        "<text x=\"10\" y=\"{:.1}\">server</text>",
        server_y + 15.0
    );
    write_kills(&mut svg, &frame, kills, lanes.len());
    write_ops(&mut svg, &frame, ops, &lanes, checks);
    write_legend(&mut svg, height);
    svg.push_str("</svg>\n");
    svg
}

/// Each kill: a band across every lane while the server was down, a mark on its lane.
fn write_kills(svg: &mut String, frame: &Frame, kills: &[Kill], lanes: usize) {
    let server_y = Frame::lane_y(lanes);
    for kill in kills {
        let _ = writeln!(
            svg,
            "<rect x=\"{:.1}\" y=\"{TOP}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"#ffe3e3\">\
             <title>SIGKILL at {} ms, ready at {} ms</title></rect>",
            frame.x(kill.killed_ms),
            (frame.x(kill.ready_ms) - frame.x(kill.killed_ms)).max(2.0),
            LANE_HEIGHT * (lanes + 1) as f64,
            kill.killed_ms,
            kill.ready_ms
        );
        let _ = writeln!(
            svg,
            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"3\" height=\"{:.1}\" fill=\"#e03131\"/>",
            frame.x(kill.killed_ms),
            server_y + 3.0,
            LANE_HEIGHT - 6.0
        );
    }
}

/// Each operation a bar on its client's lane, red when unanswered, outlined when a failed
/// check cites it.
fn write_ops(
    svg: &mut String,
    frame: &Frame,
    ops: &[Op],
    lanes: &[(usize, &str)],
    checks: &[CheckOutcome],
) {
    let cited: BTreeSet<(u64, String)> = checks
        .iter()
        .filter(|check| check.verdict == super::Verdict::Fail)
        .flat_map(|check| check.evidence.iter())
        .map(|exchange| (exchange.invoked_ms, exchange.request.clone()))
        .collect();
    for op in ops.iter().take(OPS_DRAWN_MAX) {
        let lane = lanes
            .iter()
            .position(|(client, _)| *client == op.client)
            .unwrap_or(0);
        let left = frame.x(op.exchange.invoked_ms);
        let bar = (frame.x(op.exchange.completed_ms) - left).max(1.5);
        let answered = op.exchange.response.is_some();
        let highlighted = cited.contains(&(op.exchange.invoked_ms, op.exchange.request.clone()));
        let _ = writeln!(
            svg,
            "<rect x=\"{left:.1}\" y=\"{:.1}\" width=\"{bar:.1}\" height=\"{:.1}\" fill=\"{}\"{}>\
             <title>{:?} {} {}–{} ms: {}</title></rect>",
            Frame::lane_y(lane) + 4.0,
            LANE_HEIGHT - 8.0,
            if answered { colour(op.kind) } else { "#ff8787" },
            if highlighted {
                " stroke=\"#e03131\" stroke-width=\"2\""
            } else {
                ""
            },
            op.kind,
            xml_escape(op.task_id.as_deref().unwrap_or("")),
            op.exchange.invoked_ms,
            op.exchange.completed_ms,
            xml_escape(&op.exchange.summary().chars().take(300).collect::<String>())
        );
    }
}

fn write_legend(svg: &mut String, height: f64) {
    let legend_y = height - 15.0;
    let mut legend_x = LABEL_WIDTH;
    for kind in [
        OpKind::Create,
        OpKind::Get,
        OpKind::Result,
        OpKind::Cancel,
        OpKind::List,
        OpKind::ForeignGet,
        OpKind::Settle,
        OpKind::Update,
    ] {
        let _ = writeln!(
            svg,
            "<rect x=\"{legend_x:.1}\" y=\"{:.1}\" width=\"10\" height=\"10\" fill=\"{}\"/>\
             <text x=\"{:.1}\" y=\"{legend_y:.1}\">{kind:?}</text>",
            legend_y - 9.0,
            colour(kind),
            legend_x + 14.0
        );
        legend_x += 110.0;
    }
}

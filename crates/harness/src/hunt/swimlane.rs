//! A failing run drawn as an SVG swimlane diagram: one lane per node and client, time
//! running right. Kills, pauses and store outages are bands on their victim's lane (a
//! crash at a named point a red cross), clock jumps a dashed line across every lane. The
//! violated task's events are drawn strong and the rest faint; the events the oracle
//! cites as the violation (the conflicting writes) are ringed in red and joined. Every
//! strong mark carries its timeline line as a tooltip.
//!
//! Plain SVG 1.1 with no script or external reference: it renders on GitHub, in a
//! browser, and in an image viewer.

use crate::check::{AppliedKind, ClientOp, ClientResult, Event};
use crate::report::xml_escape as escape;
use crate::sim::{SimOutcome, offset_ms};
use std::collections::BTreeMap;
use std::fmt::Write as _;

const LABEL_WIDTH: f64 = 110.0;
const PLOT_WIDTH: f64 = 1100.0;
const LANE_HEIGHT: f64 = 30.0;
const TOP: f64 = 58.0;

/// The diagram of `outcome`, titled `title`.
pub fn render(outcome: &SimOutcome, title: &str) -> String {
    let lanes = lane_order(
        outcome
            .lanes
            .iter()
            .map(|lane| &**lane)
            .chain(outcome.nodes.iter().map(String::as_str)),
    );
    // The phase marker alone does not stretch the axis: a short race stays readable.
    let end_ms = outcome
        .history
        .iter()
        .filter(|event| !is_phase_marker(event))
        .map(offset_ms)
        .max()
        .unwrap_or(0)
        .max(1)
        * 21
        / 20;
    let height = TOP + LANE_HEIGHT * lanes.len() as f64 + 100.0;
    let width = LABEL_WIDTH + PLOT_WIDTH + 20.0;
    let first = outcome.violations.first();
    let focus = first.map(|v| v.task_id.as_str()).unwrap_or("");
    let cited = conflicting(outcome);
    let timeline = outcome.timeline();

    let mut svg = String::new();
    let _ = write!(
        svg,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0}\" height=\"{height:.0}\" \
         viewBox=\"0 0 {width:.0} {height:.0}\" font-family=\"monospace\" font-size=\"11\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n\
         <text x=\"8\" y=\"18\" font-size=\"14\" font-weight=\"bold\">{}</text>\n",
        escape(title)
    );
    let headline = match first {
        Some(v) => format!(
            "{} violated for task {}: {}",
            v.invariant,
            v.task_id,
            shorten(&v.detail, 150)
        ),
        None => "no violation".into(),
    };
    let _ = writeln!(
        svg,
        "<text x=\"8\" y=\"36\" fill=\"#b00020\">{}</text>",
        escape(&headline)
    );
    let geo = Geometry {
        axis_y: TOP + LANE_HEIGHT * lanes.len() as f64,
        lanes,
        end_ms,
    };
    lanes_and_axis(&geo, &mut svg);
    fault_bands(&geo, outcome, &timeline, &mut svg);
    event_marks(&geo, outcome, &timeline, focus, &mut svg);
    let points = violation_marks(&geo, outcome, &timeline, &cited, &mut svg);
    legend(&geo, &timeline, &points, &mut svg);
    svg.push_str("</svg>\n");
    svg
}

/// Where things go: a lane's middle, a time's abscissa.
struct Geometry {
    lanes: Vec<String>,
    end_ms: u64,
    axis_y: f64,
}

impl Geometry {
    fn x(&self, ms: u64) -> f64 {
        LABEL_WIDTH + PLOT_WIDTH * ms as f64 / self.end_ms as f64
    }

    fn lane_y(&self, lane: &str) -> f64 {
        let index = self.lanes.iter().position(|name| name == lane).unwrap_or(0);
        TOP + LANE_HEIGHT * index as f64 + LANE_HEIGHT / 2.0
    }
}

/// Lanes and the time axis.
fn lanes_and_axis(geo: &Geometry, svg: &mut String) {
    let (lanes, end_ms) = (&geo.lanes, geo.end_ms);
    for (index, lane) in lanes.iter().enumerate() {
        let top = TOP + LANE_HEIGHT * index as f64;
        let shade = if index % 2 == 0 { "#f4f6f8" } else { "#ffffff" };
        let _ = writeln!(
            svg,
            "<rect x=\"{LABEL_WIDTH}\" y=\"{top}\" width=\"{PLOT_WIDTH}\" height=\"{LANE_HEIGHT}\" fill=\"{shade}\"/>\
             <text x=\"8\" y=\"{:.1}\">{}</text>",
            top + LANE_HEIGHT / 2.0 + 4.0,
            escape(lane)
        );
    }
    let axis_y = geo.axis_y;
    for tick in 0..=10u64 {
        let ms = end_ms * tick / 10;
        let _ = writeln!(
            svg,
            "<line x1=\"{0:.1}\" y1=\"{TOP}\" x2=\"{0:.1}\" y2=\"{axis_y}\" stroke=\"#dde\" stroke-width=\"0.5\"/>\
             <text x=\"{0:.1}\" y=\"{1:.1}\" text-anchor=\"middle\" fill=\"#667\">{ms} ms</text>",
            geo.x(ms),
            axis_y + 14.0
        );
    }
}

/// Fault bands: "<kind> begins" opens one on its lane, "<kind> ends" closes it; clock
/// jumps, crashes at a point and the liveness phase are lines and crosses.
fn fault_bands(geo: &Geometry, outcome: &SimOutcome, timeline: &[String], svg: &mut String) {
    let (axis_y, end_ms) = (geo.axis_y, geo.end_ms);
    let mut open: BTreeMap<&str, (u64, String)> = BTreeMap::new();
    for (index, (event, lane)) in outcome.history.iter().zip(&outcome.lanes).enumerate() {
        let Event::Fault { what, .. } = event else {
            continue;
        };
        let at_ms = offset_ms(event);
        let tip = escape(timeline.get(index).map_or("", String::as_str));
        if let Some(kind) = what.strip_suffix(" begins") {
            if kind == "clock-jump" {
                let _ = writeln!(
                    svg,
                    "<line x1=\"{0:.1}\" y1=\"{TOP}\" x2=\"{0:.1}\" y2=\"{axis_y}\" stroke=\"#7b1fa2\" stroke-dasharray=\"4 3\"><title>{tip}</title></line>",
                    geo.x(at_ms)
                );
            } else {
                open.insert(&**lane, (at_ms, kind.to_owned()));
            }
        } else if what.contains(" ends: ") {
            if let Some((began_ms, kind)) = open.remove(&**lane) {
                let colour = match kind.as_str() {
                    "kill" => "#e53935",
                    "pause" => "#fb8c00",
                    _ => "#8e24aa",
                };
                let _ = writeln!(
                    svg,
                    "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{colour}\" fill-opacity=\"0.25\" stroke=\"{colour}\"><title>{kind} {began_ms}..{at_ms} ms</title></rect>\
                     <text x=\"{:.1}\" y=\"{:.1}\" fill=\"{colour}\" font-size=\"9\">{kind}</text>",
                    geo.x(began_ms),
                    geo.lane_y(lane) - LANE_HEIGHT / 2.0 + 2.0,
                    (geo.x(at_ms) - geo.x(began_ms)).max(2.0),
                    LANE_HEIGHT - 4.0,
                    geo.x(began_ms) + 2.0,
                    geo.lane_y(lane) - LANE_HEIGHT / 2.0 + 11.0
                );
            }
        } else if what.starts_with("crash node") {
            let (cx, cy) = (geo.x(at_ms), geo.lane_y(lane));
            let _ = writeln!(
                svg,
                "<path d=\"M{:.1} {:.1} l10 10 m0 -10 l-10 10\" stroke=\"#e53935\" stroke-width=\"2.5\"><title>{tip}</title></path>",
                cx - 5.0,
                cy - 5.0
            );
        } else if is_phase_marker(event) && at_ms <= end_ms {
            let _ = writeln!(
                svg,
                "<line x1=\"{0:.1}\" y1=\"{TOP}\" x2=\"{0:.1}\" y2=\"{axis_y}\" stroke=\"#2e7d32\" stroke-dasharray=\"8 4\"><title>{tip}</title></line>\
                 <text x=\"{1:.1}\" y=\"{2:.1}\" fill=\"#2e7d32\">liveness phase</text>",
                geo.x(at_ms),
                geo.x(at_ms) + 4.0,
                TOP - 4.0
            );
        }
    }
}

/// Events: faint unless they concern the violated task.
fn event_marks(
    geo: &Geometry,
    outcome: &SimOutcome,
    timeline: &[String],
    focus: &str,
    svg: &mut String,
) {
    for (index, (event, lane)) in outcome.history.iter().zip(&outcome.lanes).enumerate() {
        let Some((shape, colour, task)) = glyph(event) else {
            continue;
        };
        let strong = !focus.is_empty() && task == focus;
        let (cx, cy) = (geo.x(offset_ms(event)), geo.lane_y(lane));
        let opacity = if strong { "1" } else { "0.3" };
        let tip = if strong {
            format!(
                "<title>{}</title>",
                escape(timeline.get(index).map_or("", String::as_str))
            )
        } else {
            String::new()
        };
        let _ = match shape {
            Shape::Dot => writeln!(
                svg,
                "<circle cx=\"{cx:.1}\" cy=\"{cy:.1}\" r=\"3\" fill=\"{colour}\" fill-opacity=\"{opacity}\">{tip}</circle>"
            ),
            Shape::Square => writeln!(
                svg,
                "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"7\" height=\"7\" fill=\"{colour}\" fill-opacity=\"{opacity}\">{tip}</rect>",
                cx - 3.5,
                cy - 3.5
            ),
            Shape::Diamond => writeln!(
                svg,
                "<path d=\"M{cx:.1} {:.1} l5 5 l-5 5 l-5 -5 z\" fill=\"{colour}\" fill-opacity=\"{opacity}\">{tip}</path>",
                cy - 5.0
            ),
            Shape::Tick => writeln!(
                svg,
                "<line x1=\"{cx:.1}\" y1=\"{:.1}\" x2=\"{cx:.1}\" y2=\"{:.1}\" stroke=\"{colour}\" stroke-opacity=\"{opacity}\">{tip}</line>",
                cy - 6.0,
                cy + 6.0
            ),
        };
    }
}

/// The violation: the cited events ringed and joined in time order.
fn violation_marks(
    geo: &Geometry,
    outcome: &SimOutcome,
    timeline: &[String],
    cited: &[usize],
    svg: &mut String,
) -> Vec<(f64, f64, usize)> {
    let mut points: Vec<(f64, f64, usize)> = cited
        .iter()
        .filter_map(|index| {
            let event = outcome.history.get(*index)?;
            let lane = outcome.lanes.get(*index)?;
            Some((geo.x(offset_ms(event)), geo.lane_y(lane), *index))
        })
        .collect();
    points.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.2.cmp(&b.2)));
    points.dedup_by_key(|point| point.2);
    if points.len() > 1 {
        let path: Vec<String> = points
            .iter()
            .map(|(px, py, _)| format!("{px:.1},{py:.1}"))
            .collect();
        let _ = writeln!(
            svg,
            "<polyline points=\"{}\" fill=\"none\" stroke=\"#b00020\" stroke-width=\"1.5\" stroke-dasharray=\"3 2\"/>",
            path.join(" ")
        );
    }
    for (number, (px, py, index)) in points.iter().enumerate() {
        let _ = writeln!(
            svg,
            "<circle cx=\"{px:.1}\" cy=\"{py:.1}\" r=\"8\" fill=\"none\" stroke=\"#b00020\" stroke-width=\"2\"><title>{}</title></circle>\
             <text x=\"{:.1}\" y=\"{:.1}\" fill=\"#b00020\" font-weight=\"bold\">{}</text>",
            escape(timeline.get(*index).map_or("", String::as_str)),
            px + 9.0,
            py - 8.0,
            number + 1
        );
    }

    points
}

/// Legend and the cited events spelled out.
fn legend(geo: &Geometry, timeline: &[String], points: &[(f64, f64, usize)], svg: &mut String) {
    let legend_y = geo.axis_y + 34.0;
    let _ = writeln!(
        svg,
        "<text x=\"8\" y=\"{legend_y:.1}\" fill=\"#445\">● client op: blue create, grey get, purple result, orange cancel, teal list, red lost answer   \
         ■ store write: green create, dark green transition, orange cancel, black terminal</text>\
         <text x=\"8\" y=\"{:.1}\" fill=\"#445\">◆ effect   | notification   bands: kill, pause, store outage   \
         ✕ crash at a point   ○ the violation and the write it conflicts with (faint: other tasks)</text>",
        legend_y + 14.0
    );
    for (row, (_, _, index)) in points.iter().take(3).enumerate() {
        let _ = writeln!(
            svg,
            "<text x=\"8\" y=\"{:.1}\" fill=\"#b00020\" font-size=\"10\">{}: {}</text>",
            legend_y + 14.0 * (row + 2) as f64,
            row + 1,
            escape(&shorten(
                timeline.get(*index).map_or("", String::as_str).trim(),
                200
            ))
        );
    }
}

/// The events the oracle cites, and for each cited store write the write it landed on
/// (the task's previous one): the conflicting pair is what a reader looks for.
fn conflicting(outcome: &SimOutcome) -> Vec<usize> {
    let mut out = Vec::new();
    for index in outcome
        .violations
        .iter()
        .flat_map(|v| v.events.iter().copied())
    {
        out.push(index);
        if let Some(Event::Applied { task_id, .. }) = outcome.history.get(index) {
            let previous = outcome.history[..index].iter().rposition(|earlier| {
                matches!(earlier, Event::Applied { task_id: other, .. } if other == task_id)
            });
            out.extend(previous);
        }
    }
    out
}

/// The supervisor's "faults stop: liveness phase" event.
fn is_phase_marker(event: &Event) -> bool {
    matches!(event, Event::Fault { what, .. } if what.starts_with("faults stop"))
}

enum Shape {
    Dot,
    Square,
    Diamond,
    Tick,
}

/// How an event is drawn, and the task it concerns.
fn glyph(event: &Event) -> Option<(Shape, &'static str, &str)> {
    match event {
        Event::Client { op, result, .. } => {
            let (colour, task) = match op {
                ClientOp::Create { .. } => ("#1e88e5", revealed_task(result)),
                ClientOp::Get { task_id } => ("#78909c", task_id.as_str()),
                ClientOp::Result { task_id } => ("#8e24aa", task_id.as_str()),
                ClientOp::GetModern { task_id } => ("#5e35b1", task_id.as_str()),
                ClientOp::Cancel { task_id } => ("#fb8c00", task_id.as_str()),
                ClientOp::ProvideInput { task_id, .. } => ("#6d4c41", task_id.as_str()),
                ClientOp::List { .. } => ("#00897b", ""),
            };
            let colour = match result {
                ClientResult::Indeterminate | ClientResult::Fail { .. } => "#e53935",
                ClientResult::Ok { .. } => colour,
            };
            Some((Shape::Dot, colour, task))
        }
        Event::Applied {
            task_id,
            kind,
            status,
            ..
        } => {
            let colour = match (kind, status.is_terminal()) {
                (_, true) => "#000000",
                (AppliedKind::Create, _) => "#43a047",
                (AppliedKind::Transition, _) => "#1b5e20",
                (AppliedKind::Cancel, _) => "#fb8c00",
                (AppliedKind::Input, _) => "#00897b",
            };
            Some((Shape::Square, colour, task_id.as_str()))
        }
        Event::Effect { task_id, .. } => Some((Shape::Diamond, "#f9a825", task_id.as_str())),
        Event::EffectPrepared { task_id, .. } => Some((Shape::Tick, "#f9a825", task_id.as_str())),
        Event::EffectDiscarded { task_id, .. } => Some((Shape::Tick, "#8d6e63", task_id.as_str())),
        Event::Notified { task_id, .. } => Some((Shape::Tick, "#90a4ae", task_id.as_str())),
        Event::StoreError { task_id, .. } => Some((Shape::Diamond, "#d32f2f", task_id.as_str())),
        Event::Claimed { task_id, .. } | Event::Acked { task_id, .. } => {
            Some((Shape::Tick, "#b0bec5", task_id.as_str()))
        }
        Event::Refused { task_id, .. } => Some((Shape::Tick, "#ef6c00", task_id.as_str())),
        Event::Runtime { task_id, .. } => Some((Shape::Tick, "#6d4c41", task_id.as_str())),
        Event::ToolRun { task_id, .. } | Event::ToolReturned { task_id, .. } => {
            Some((Shape::Tick, "#7e57c2", task_id.as_str()))
        }
        Event::Pushed { .. }
        | Event::Opened { .. }
        | Event::Fault { .. }
        | Event::Swept { .. }
        | Event::Injected { .. } => None,
    }
}

fn revealed_task(result: &ClientResult) -> &str {
    match result {
        ClientResult::Ok { revealed, .. } => revealed.first().map_or("", |r| r.task_id.as_str()),
        _ => "",
    }
}

/// Lanes top to bottom: supervisor, store, dispatcher, workers, sweeper, clients.
fn lane_order<'a>(lanes: impl Iterator<Item = &'a str>) -> Vec<String> {
    let rank = |lane: &str| -> (u8, u64, String) {
        let number = |prefix: &str| {
            lane.strip_prefix(prefix)
                .and_then(|n| n.parse().ok())
                .unwrap_or(0)
        };
        match lane {
            "supervisor" => (0, 0, String::new()),
            "store" => (1, 0, String::new()),
            "dispatcher" => (2, 0, String::new()),
            l if l.starts_with("worker-") => (3, number("worker-"), String::new()),
            "sweeper" => (4, 0, String::new()),
            l if l.starts_with("client-") => (5, number("client-"), String::new()),
            other => (6, 0, other.to_owned()),
        }
    };
    let mut unique: Vec<String> = lanes.map(str::to_owned).collect();
    unique.sort_by_key(|lane| rank(lane));
    unique.dedup();
    // The store lane is drawn even when it saw no outage: writes happen on their callers'
    // lanes, but a reader looks for it.
    if !unique.iter().any(|lane| lane == "store") {
        unique.insert(unique.len().min(1), "store".into());
    }
    unique
}

fn shorten(text: &str, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        text.to_owned()
    } else {
        let cut: String = text.chars().take(max_chars).collect();
        format!("{cut}…")
    }
}

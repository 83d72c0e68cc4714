//! One matrix, several processes. The mutant selection is process-wide, so a process runs
//! one cell at a time; a plan split into shards (its rows dealt out in turn) runs in as many
//! processes side by side, each writing its rows as JSON, and [`Matrix::join`] puts the
//! rows back in the plan's order. Every cell is computed as in one process: a row's cells
//! depend only on its mutant, never on the rows run before it in the same process.

use super::{Cell, Column, Engine, Matrix, Plan, Row};
use crate::mutants::Mutant;
use serde_json::{Value, json};
use std::time::Duration;

impl Plan {
    /// Shard `index` of `count`: every `count`-th row from the `index`-th, so each shard
    /// gets some of the long rows; the probe's cells side by side are divided among the
    /// shards, so all of them together probe as many servers at once as one process would.
    pub fn shard(&self, index: usize, count: usize) -> Plan {
        assert!(index < count, "shard {index} of {count}");
        let mut plan = self.clone();
        plan.mutants = (self.mutants.iter().enumerate())
            .filter(|(row, _)| row % count == index)
            .map(|(_, mutant)| *mutant)
            .collect();
        plan.probe_cells_parallel = self.probe_cells_parallel.div_ceil(count).max(1);
        plan
    }
}

impl Matrix {
    /// The matrix as JSON: `{"rows": [{"mutant": NAME|null, "cells": [{"engine", "store",
    /// "killed", "spent", "elapsed_ns", "detail", "skipped"}]}]}`.
    pub fn to_json(&self) -> String {
        let rows: Vec<Value> = (self.rows.iter())
            .map(|row| {
                let cells: Vec<Value> = (row.cells.iter())
                    .map(|(column, cell)| {
                        json!({
                            "engine": column.engine.name(),
                            "store": column.store,
                            "killed": cell.killed,
                            "spent": cell.spent,
                            "elapsed_ns": u64::try_from(cell.elapsed.as_nanos()).unwrap_or(u64::MAX),
                            "detail": cell.detail,
                            "skipped": cell.skipped,
                        })
                    })
                    .collect();
                json!({ "mutant": row.mutant.map(Mutant::name), "cells": cells })
            })
            .collect();
        json!({ "rows": rows }).to_string()
    }

    /// A matrix [`Matrix::to_json`] wrote; the error names the row, cell and field.
    pub fn from_json(text: &str) -> Result<Matrix, String> {
        let value: Value = serde_json::from_str(text).map_err(|error| format!("JSON: {error}"))?;
        let rows = field(&value, "rows")?
            .as_array()
            .ok_or("rows: not an array")?;
        let rows = (rows.iter().enumerate())
            .map(|(index, row)| {
                row_from_json(row).map_err(|error| format!("rows[{index}]: {error}"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Matrix { rows })
    }

    /// The rows of `shards`, in `plan`'s order; an error names a row planned but missing,
    /// or found twice.
    pub fn join(plan: &Plan, shards: Vec<Matrix>) -> Result<Matrix, String> {
        let mut found: Vec<Row> = shards.into_iter().flat_map(|shard| shard.rows).collect();
        let mut rows = Vec::with_capacity(plan.mutants.len());
        for mutant in &plan.mutants {
            let label = mutant.map_or("(unmutated)", Mutant::name);
            let at = (found.iter().position(|row| row.mutant == *mutant))
                .ok_or_else(|| format!("no shard ran the row {label}"))?;
            rows.push(found.remove(at));
        }
        if let Some(extra) = found.first() {
            return Err(format!("a row no shard should have run: {}", extra.label()));
        }
        Ok(Matrix { rows })
    }
}

fn row_from_json(row: &Value) -> Result<Row, String> {
    let mutant = match field(row, "mutant")? {
        Value::Null => None,
        Value::String(name) => {
            Some(Mutant::parse(name).map_err(|error| format!("mutant: {error}"))?)
        }
        _ => return Err("mutant: neither a name nor null".into()),
    };
    let cells = field(row, "cells")?
        .as_array()
        .ok_or("cells: not an array")?;
    let cells = (cells.iter().enumerate())
        .map(|(index, cell)| {
            cell_from_json(cell).map_err(|error| format!("cells[{index}]: {error}"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Row { mutant, cells })
}

fn cell_from_json(cell: &Value) -> Result<(Column, Cell), String> {
    let text = |name: &str| {
        field(cell, name)?
            .as_str()
            .ok_or(format!("{name}: not a string"))
    };
    let flag = |name: &str| {
        field(cell, name)?
            .as_bool()
            .ok_or(format!("{name}: not a boolean"))
    };
    let count = |name: &str| {
        field(cell, name)?
            .as_u64()
            .ok_or(format!("{name}: not a count"))
    };
    let engine = Engine::parse(text("engine")?).map_err(|error| format!("engine: {error}"))?;
    let store = match field(cell, "store")? {
        Value::Null => None,
        Value::String(store) => Some(store.clone()),
        _ => return Err("store: neither a name nor null".into()),
    };
    let column = Column { engine, store };
    let cell = Cell {
        killed: flag("killed")?,
        spent: count("spent")?,
        elapsed: Duration::from_nanos(count("elapsed_ns")?),
        detail: text("detail")?.to_owned(),
        skipped: flag("skipped")?,
    };
    Ok((column, cell))
}

fn field<'v>(object: &'v Value, name: &str) -> Result<&'v Value, String> {
    object.get(name).ok_or_else(|| format!("{name}: missing"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(killed: bool, detail: &str) -> Cell {
        Cell {
            killed,
            spent: 7,
            elapsed: Duration::from_millis(1_250),
            detail: detail.to_owned(),
            skipped: false,
        }
    }

    fn matrix() -> Matrix {
        let fixture = Column {
            engine: Engine::Fixture,
            store: None,
        };
        let sqlite = Column {
            engine: Engine::Simulation,
            store: Some("sqlite".to_owned()),
        };
        let rows = [None, Some(Mutant::ALL[0]), Some(Mutant::ALL[1])].map(|mutant| Row {
            mutant,
            cells: vec![
                (
                    fixture.clone(),
                    cell(mutant.is_some(), "case \"x\": expected refused"),
                ),
                (sqlite.clone(), cell(false, "")),
            ],
        });
        Matrix {
            rows: rows.to_vec(),
        }
    }

    #[test]
    fn a_matrix_survives_its_json() {
        let original = matrix();
        let read = Matrix::from_json(&original.to_json()).expect("parses");
        assert_eq!(read.to_json(), original.to_json());
        assert_eq!(read.render_text(), original.render_text());
        assert_eq!(
            read.rows[1].cells[0].1.elapsed,
            Duration::from_millis(1_250)
        );
    }

    #[test]
    fn shards_deal_the_rows_and_join_them_back_in_order() {
        let mut plan = Plan::full("/nonexistent");
        plan.mutants.truncate(3);
        let (first, second) = (plan.shard(0, 2), plan.shard(1, 2));
        assert_eq!(first.mutants, vec![plan.mutants[0], plan.mutants[2]]);
        assert_eq!(second.mutants, vec![plan.mutants[1]]);
        assert_eq!(first.probe_cells_parallel + second.probe_cells_parallel, 6);
        let whole = matrix();
        let split = |keep: &dyn Fn(usize) -> bool| Matrix {
            rows: (whole.rows.iter().enumerate())
                .filter(|(index, _)| keep(*index))
                .map(|(_, row)| row.clone())
                .collect(),
        };
        let joined = Matrix::join(&plan, vec![split(&|i| i == 1), split(&|i| i != 1)]);
        assert_eq!(joined.expect("joins").to_json(), whole.to_json());
        let missing = Matrix::join(&plan, vec![split(&|i| i != 1)]).unwrap_err();
        assert!(missing.contains("no shard ran the row"), "{missing}");
        let twice = Matrix::join(&plan, vec![split(&|_| true), split(&|i| i == 0)]).unwrap_err();
        assert!(twice.contains("(unmutated)"), "{twice}");
    }

    #[test]
    fn a_malformed_shard_is_named_not_a_panic() {
        let text = matrix()
            .to_json()
            .replace("\"spent\":7", "\"spent\":\"seven\"");
        let error = Matrix::from_json(&text).unwrap_err();
        assert_eq!(error, "rows[0]: cells[0]: spent: not a count");
        let error = Matrix::from_json("{\"rows\": [{\"mutant\": \"no-such\", \"cells\": []}]}");
        assert!(
            error
                .unwrap_err()
                .starts_with("rows[0]: mutant: unknown mutant")
        );
    }
}

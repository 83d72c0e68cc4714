//! Which store to check: its language, module, factory and interface, from the command
//! line's `--node ./my-store.mjs[#factory]` or `--python my_store[:factory]`.

use std::path::Path;

/// The language a store is written in: the shim that loads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Language {
    /// Node (ES modules).
    Node,
    /// CPython 3.
    Python,
}

/// The store interface a module implements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interface {
    /// `TaskStore` of the TypeScript SDK `@modelcontextprotocol/sdk` 1.x (2025-11-25):
    /// `createTask`, `getTask`, `updateTaskStatus`, `storeTaskResult`, `getTaskResult`,
    /// `listTasks`, each with a trailing optional `sessionId`.
    TsSdk,
    /// `TaskStore` of the Python SDK `mcp` 1.x (`mcp.shared.experimental.tasks.store`):
    /// async `create_task`, `get_task`, `update_task`, `store_result`, `get_result`,
    /// `list_tasks`, `delete_task`; no owner or session parameter.
    PyMcp,
}

impl Interface {
    /// Its name on the command line and in the protocol.
    pub fn name(self) -> &'static str {
        match self {
            Interface::TsSdk => "ts-sdk",
            Interface::PyMcp => "py-mcp",
        }
    }

    /// The language its stores are written in.
    pub fn language(self) -> Language {
        match self {
            Interface::TsSdk => Language::Node,
            Interface::PyMcp => Language::Python,
        }
    }

    /// `ts-sdk` or `py-mcp`.
    pub fn parse(name: &str) -> Result<Interface, String> {
        match name {
            "ts-sdk" => Ok(Interface::TsSdk),
            "py-mcp" => Ok(Interface::PyMcp),
            other => Err(format!(
                "--interface {other:?}: expected ts-sdk (the TypeScript SDK's TaskStore) or \
                 py-mcp (the Python SDK's TaskStore)"
            )),
        }
    }
}

/// A store to check.
#[derive(Clone, Debug)]
pub struct StoreSpec {
    /// Its language.
    pub language: Language,
    /// The module: an absolute path (Node, or a Python file), or a dotted Python name.
    pub module: String,
    /// The export that makes a store: a function, or a class.
    pub factory: String,
    /// The interface the store implements.
    pub interface: Interface,
    /// The store's clock is the shim's fake one, moved by the engines (else real time).
    pub fake_clock: bool,
    /// The runtime to run the shim with (`node`, `python3` unless given).
    pub runtime: Option<String>,
}

/// The factory a Node module exports unless `#NAME` says otherwise.
pub const NODE_FACTORY: &str = "createStore";
/// The factory a Python module has unless `:NAME` says otherwise.
pub const PYTHON_FACTORY: &str = "create_store";

impl StoreSpec {
    /// `--node PATH[#FACTORY]`: the path must name a file.
    pub fn node(text: &str) -> Result<StoreSpec, String> {
        let (path, factory) = match text.rsplit_once('#') {
            Some((path, factory)) if !factory.is_empty() => (path, factory),
            Some((_, _)) => return Err(format!("--node {text:?}: nothing after `#`")),
            None => (text, NODE_FACTORY),
        };
        let module = existing_file("--node", path)?;
        Ok(StoreSpec {
            language: Language::Node,
            module,
            factory: factory.to_owned(),
            interface: Interface::TsSdk,
            fake_clock: true,
            runtime: None,
        })
    }

    /// `--python MODULE[:FACTORY]`: a dotted module name (imported from the working
    /// directory) or a path to a `.py` file.
    pub fn python(text: &str) -> Result<StoreSpec, String> {
        let (module, factory) = match text.rsplit_once(':') {
            Some((module, factory)) if !factory.is_empty() => (module, factory),
            Some((_, _)) => return Err(format!("--python {text:?}: nothing after `:`")),
            None => (text, PYTHON_FACTORY),
        };
        let module = if module.ends_with(".py") || module.contains('/') {
            existing_file("--python", module)?
        } else if !module.is_empty()
            && module.split('.').all(|part| {
                !part.is_empty() && part.chars().all(|c| c.is_alphanumeric() || c == '_')
            })
        {
            module.to_owned()
        } else {
            return Err(format!(
                "--python {text:?}: expected MODULE[:FACTORY], MODULE a dotted name or a .py file"
            ));
        };
        Ok(StoreSpec {
            language: Language::Python,
            module,
            factory: factory.to_owned(),
            interface: Interface::PyMcp,
            fake_clock: true,
            runtime: None,
        })
    }

    /// The same store read as `interface`, which must be of its language.
    pub fn with_interface(mut self, interface: Interface) -> Result<StoreSpec, String> {
        if interface.language() != self.language {
            return Err(format!(
                "--interface {}: that interface's stores are written in {:?}, not {:?}",
                interface.name(),
                interface.language(),
                self.language
            ));
        }
        self.interface = interface;
        Ok(self)
    }

    /// The program that runs the shim.
    pub fn runtime_program(&self) -> String {
        self.runtime.clone().unwrap_or_else(|| {
            match self.language {
                Language::Node => "node",
                Language::Python => "python3",
            }
            .to_owned()
        })
    }

    /// `node ./store.mjs#createStore (ts-sdk)`, for messages.
    pub fn describe(&self) -> String {
        let joint = match self.language {
            Language::Node => '#',
            Language::Python => ':',
        };
        format!(
            "{} {}{joint}{} ({})",
            self.runtime_program(),
            self.module,
            self.factory,
            self.interface.name()
        )
    }
}

fn existing_file(flag: &str, path: &str) -> Result<String, String> {
    let found = Path::new(path);
    if !found.is_file() {
        return Err(format!("{flag} {path:?}: no such file"));
    }
    found
        .canonicalize()
        .map(|absolute| absolute.display().to_string())
        .map_err(|error| format!("{flag} {path:?}: {error}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_name_what_is_wrong() {
        assert!(
            StoreSpec::node("/no/such.mjs")
                .unwrap_err()
                .contains("no such file")
        );
        assert!(
            StoreSpec::node("x.mjs#")
                .unwrap_err()
                .contains("nothing after")
        );
        let python = StoreSpec::python("my_store.sub:make").unwrap();
        assert_eq!(
            (python.module.as_str(), python.factory.as_str()),
            ("my_store.sub", "make")
        );
        assert_eq!(
            StoreSpec::python("my_store").unwrap().factory,
            PYTHON_FACTORY
        );
        assert!(
            StoreSpec::python("my store")
                .unwrap_err()
                .contains("dotted name")
        );
        let wrong = StoreSpec::python("m")
            .unwrap()
            .with_interface(Interface::TsSdk);
        assert!(wrong.unwrap_err().contains("Node"));
        assert!(Interface::parse("ts-ext").unwrap_err().contains("ts-sdk"));
    }
}

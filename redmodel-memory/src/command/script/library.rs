//! Redis Functions' library registry (Redis 7.0's functions.c and
//! function_lua.c): FUNCTION LOAD runs a library's code in a Lua state of
//! its own, where the code can only register functions; FCALL runs them.
//!
//! Libraries are server state, not keyspace: FLUSHALL and SCRIPT FLUSH
//! leave them.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mlua::{HookTriggers, MultiValue, Table, Value, VmState};

use super::busy::Busy;
use super::raised::raise;
use super::register::{valid_name, Func, Pending, BAD_NAME};
use super::sandbox::{self, Kind, State};
use crate::error::CmdError;
use crate::rdb;

/// A loaded library: its name, its whole code (shebang included, as
/// FUNCTION LIST WITHCODE and DUMP give it back) and its functions.
#[derive(Clone)]
pub(crate) struct Library {
    pub(crate) name: String,
    pub(crate) code: Vec<u8>,
    pub(crate) functions: Vec<Func>,
}

/// The libraries of an engine and the Lua state their functions run in.
#[derive(Default)]
pub(crate) struct Functions {
    state: Option<Arc<State>>,
    busy: Arc<Busy>,
    libraries: BTreeMap<String, Library>,
    /// Lower-case function name -> its library (function names are
    /// case-insensitive for FCALL and for collisions, as Redis's dict).
    index: HashMap<String, String>,
    /// The version `redis.REDIS_VERSION` reports.
    pub(crate) version: crate::RedisVersion,
}

impl std::fmt::Debug for Functions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Functions")
            .field("libraries", &self.libraries.len())
            .finish_non_exhaustive()
    }
}

/// How FUNCTION RESTORE treats the libraries already loaded.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Policy {
    Flush,
    Append,
    Replace,
}

/// FUNCTION LOAD's time limit for running a library's code.
const LOAD_TIMEOUT: Duration = Duration::from_millis(500);

/// A library's shebang: its engine, its name, and where its code starts
/// (at the shebang's newline, keeping the line numbers).
fn metadata(code: &[u8]) -> Result<(String, String, usize), String> {
    if !code.starts_with(b"#!") {
        return Err("Missing library metadata".into());
    }
    let Some(end) = code.iter().position(|&b| b == b'\n') else {
        return Err("Invalid library metadata".into());
    };
    let line = &code[..end];
    let line = line.split(|&b| b == 0).next().unwrap_or(line);
    let parts = crate::args::split_args(line).unwrap_or_default();
    let Some(first) = parts.first().filter(|w| w.len() >= 2) else {
        return Err("Invalid library metadata".into());
    };
    let engine = String::from_utf8_lossy(&first[2..]).into_owned();
    let mut name = None;
    for part in &parts[1..] {
        if part.len() >= 5 && part[..5].eq_ignore_ascii_case(b"name=") {
            if name.is_some() {
                return Err(
                    "Invalid metadata value, name argument was given multiple times".into(),
                );
            }
            name = Some(String::from_utf8_lossy(&part[5..]).into_owned());
            continue;
        }
        return Err(format!(
            "Invalid metadata value given: {}",
            String::from_utf8_lossy(part)
        ));
    }
    let name = name.ok_or_else(|| "Library name was not given".to_string())?;
    Ok((engine, name, end))
}

impl Functions {
    /// No libraries; scripts report to `busy`.
    pub(crate) fn new(busy: Arc<Busy>) -> Self {
        Functions {
            busy,
            ..Functions::default()
        }
    }

    fn state(&mut self) -> Result<Arc<State>, CmdError> {
        if let Some(state) = &self.state {
            return Ok(Arc::clone(state));
        }
        let state = Arc::new(
            sandbox::new_state(Kind::Functions, &self.busy, self.version)
                .map_err(|e| super::internal(&e))?,
        );
        self.state = Some(Arc::clone(&state));
        Ok(state)
    }

    /// The Lua state functions run in (for FCALL).
    pub(super) fn lua_state(&mut self) -> Result<Arc<State>, CmdError> {
        self.state()
    }

    /// The libraries, by name.
    pub(crate) fn libraries(&self) -> impl Iterator<Item = &Library> {
        self.libraries.values()
    }

    /// The Lua state's memory as Redis reports its Lua's; `None` before
    /// the first library.
    pub(crate) fn vm_bytes(&self) -> Option<u64> {
        self.state.as_ref().map(|s| s.vm_bytes())
    }

    /// The number of functions loaded.
    pub(crate) fn function_count(&self) -> usize {
        self.index.len()
    }

    /// The function of this name (case-insensitive).
    pub(crate) fn function(&self, name: &[u8]) -> Option<&Func> {
        let name = std::str::from_utf8(name).ok()?.to_ascii_lowercase();
        let library = self.libraries.get(self.index.get(&name)?)?;
        library
            .functions
            .iter()
            .find(|f| f.name.eq_ignore_ascii_case(&name))
    }

    /// FUNCTION FLUSH: no library, and a new Lua state, as Redis starts
    /// its engine afresh (its memory back to a fresh state's).
    pub(crate) fn flush_all(&mut self) {
        self.flush();
        self.state = None;
    }

    /// Forgets every library (FUNCTION RESTORE's FLUSH policy, which
    /// keeps the state the new ones were made in).
    pub(crate) fn flush(&mut self) {
        self.libraries.clear();
        self.index.clear();
    }

    /// FUNCTION DELETE.
    pub(crate) fn delete(&mut self, name: &[u8]) -> Result<(), CmdError> {
        let name = String::from_utf8_lossy(name);
        match self.libraries.remove(name.as_ref()) {
            Some(library) => {
                self.unindex(&library);
                Ok(())
            }
            None => Err(CmdError::err("Library not found")),
        }
    }

    fn unindex(&mut self, library: &Library) {
        for f in &library.functions {
            self.index.remove(&f.name.to_ascii_lowercase());
        }
    }

    fn link(&mut self, library: Library) {
        for f in &library.functions {
            self.index
                .insert(f.name.to_ascii_lowercase(), library.name.clone());
        }
        self.libraries.insert(library.name.clone(), library);
    }

    /// The first of `library`'s functions that another library has.
    fn collision<'l>(&self, library: &'l Library) -> Option<&'l str> {
        library
            .functions
            .iter()
            .find(|f| self.index.contains_key(&f.name.to_ascii_lowercase()))
            .map(|f| f.name.as_str())
    }

    /// `FUNCTION LOAD [REPLACE]`: the library's name.
    pub(crate) fn load(&mut self, code: &[u8], replace: bool) -> Result<String, CmdError> {
        let (engine, name, _) = metadata(code).map_err(CmdError::err)?;
        if !valid_name(name.as_bytes()) {
            return Err(CmdError::err(BAD_NAME));
        }
        if !engine.eq_ignore_ascii_case("lua") {
            return Err(CmdError::err(format!("Engine '{engine}' not found")));
        }
        if self.libraries.contains_key(&name) && !replace {
            return Err(CmdError::err(format!("Library '{name}' already exists")));
        }
        let library = self.create(code)?;
        let old = self.libraries.remove(&name);
        if let Some(old) = &old {
            self.unindex(old);
        }
        if let Some(f) = self.collision(&library) {
            let err = CmdError::err(format!("Function {f} already exists"));
            if let Some(old) = old {
                self.link(old);
            }
            return Err(err);
        }
        self.link(library);
        Ok(name)
    }

    /// Compiles and runs a library's code, which registers its functions.
    fn create(&mut self, code: &[u8]) -> Result<Library, CmdError> {
        let (_, name, start) = metadata(code).map_err(CmdError::err)?;
        if !valid_name(name.as_bytes()) {
            return Err(CmdError::err(BAD_NAME));
        }
        let state = self.state()?;
        let functions = run_library(&state, &code[start..], &self.busy)?;
        if functions.is_empty() {
            return Err(CmdError::err("No functions registered"));
        }
        Ok(Library {
            name,
            code: code.to_vec(),
            functions,
        })
    }

    /// FUNCTION DUMP: Redis's payload: each library's code as an RDB
    /// string (uncompressed) after the `RDB_OPCODE_FUNCTION2` tag, then the
    /// RDB version and the CRC64 of all before it. A real server restores
    /// it.
    pub(crate) fn dump(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for library in self.libraries.values() {
            out.push(rdb::OPCODE_FUNCTION2);
            rdb::put_length(&mut out, library.code.len() as u64);
            out.extend_from_slice(&library.code);
        }
        rdb::seal_as(out, self.version)
    }

    /// `FUNCTION RESTORE payload [policy]`: the engine's payloads and a real
    /// server's (whose long codes are LZF-compressed).
    pub(crate) fn restore(&mut self, payload: &[u8], policy: Policy) -> Result<(), CmdError> {
        let body = rdb::open_as(payload, self.version)
            .ok_or_else(|| CmdError::err("DUMP payload version or checksum are wrong"))?;
        let mut codes = Vec::new();
        let mut reader = rdb::Reader::new(body);
        while let Some(kind) = reader.byte() {
            if kind != rdb::OPCODE_FUNCTION2 {
                return Err(CmdError::err("given type is not a function"));
            }
            let code = reader
                .bytes()
                .ok_or_else(|| CmdError::err("failed loading the given functions payload"))?;
            codes.push(code);
        }
        // The payload's libraries are made first, apart (a library whose
        // code fails fails the whole restore), then joined.
        let mut new = Functions::new(Arc::clone(&self.busy));
        new.version = self.version;
        for code in codes {
            let library = self.create(&code)?;
            if new.libraries.contains_key(&library.name) {
                return Err(CmdError::err(format!(
                    "Library '{}' already exists",
                    library.name
                )));
            }
            if let Some(f) = new.collision(&library) {
                return Err(CmdError::err(format!("Function {f} already exists")));
            }
            new.link(library);
        }
        if policy == Policy::Flush {
            self.flush();
        }
        let mut replaced = Vec::new();
        for name in new.libraries.keys() {
            if let Some(old) = self.libraries.get(name) {
                if policy != Policy::Replace {
                    return Err(CmdError::err(format!("Library {name} already exists")));
                }
                replaced.push(old.clone());
            }
        }
        for old in &replaced {
            self.libraries.remove(&old.name);
            self.unindex(old);
        }
        let collision = new
            .libraries
            .values()
            .find_map(|l| self.collision(l).map(str::to_string));
        if let Some(f) = collision {
            for old in replaced {
                self.link(old);
            }
            return Err(CmdError::err(format!("Function {f} already exists")));
        }
        for (_, library) in std::mem::take(&mut new.libraries) {
            self.link(library);
        }
        Ok(())
    }
}

/// Compiles the library's code (from its shebang's newline on) and runs
/// it with only the library API in sight, under the load time limit; the
/// functions it registered.
fn run_library(state: &State, code: &[u8], busy: &Arc<Busy>) -> Result<Vec<Func>, CmdError> {
    let lua = &state.lua;
    let Some((env, mt, api)) = &state.library_env else {
        return Err(CmdError::err("Lua engine failure: no library environment"));
    };
    let function = lua
        .load(code)
        .set_name(sandbox::USER_FUNCTION)
        .set_mode(mlua::chunk::ChunkMode::Text)
        .set_environment(env.clone())
        .into_function()
        .map_err(|e| {
            let msg = match e {
                mlua::Error::SyntaxError { message, .. } => message,
                e => e.to_string(),
            };
            CmdError::err(format!("Error compiling function: {msg}"))
        })?;
    let internal = |e: mlua::Error| super::internal(&e);
    mt.raw_set("__index", api.clone()).map_err(internal)?;
    lua.set_app_data(Pending(Vec::new()));
    let start = Instant::now();
    let hooked = lua.set_global_hook(
        HookTriggers::new().every_nth_instruction(100_000),
        move |_, _| {
            if start.elapsed() > LOAD_TIMEOUT {
                return Err(raise("ERR FUNCTION LOAD timeout"));
            }
            Ok(VmState::Continue)
        },
    );
    let outcome = hooked.and_then(|()| state.xpcall.call::<MultiValue>((function, &state.handler)));
    let rehooked = sandbox::install_hook(lua, Arc::clone(busy), false);
    let pending = lua.remove_app_data::<Pending>();
    mt.raw_set("__index", state.env.clone()).map_err(internal)?;
    state.collect_garbage();
    rehooked.map_err(internal)?;
    let returned = outcome.map_err(internal)?;
    let mut ret = returned.into_iter();
    if !matches!(ret.next(), Some(Value::Boolean(true))) {
        let msg = match ret.next() {
            Some(Value::Table(t)) => err_text(&t),
            Some(other) => format!("{other:?}"),
            None => "unknown error".into(),
        };
        return Err(CmdError::err(format!("Error registering functions: {msg}")));
    }
    Ok(pending.map(|p| p.0).unwrap_or_default())
}

fn err_text(t: &Table) -> String {
    match t.raw_get::<Value>("err") {
        Ok(Value::String(s)) => s.to_string_lossy(),
        _ => "unknown error".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_errors() {
        assert_eq!(
            metadata(b"return 1").unwrap_err(),
            "Missing library metadata"
        );
        assert_eq!(
            metadata(b"#!lua name=x").unwrap_err(),
            "Invalid library metadata"
        );
        assert_eq!(
            metadata(b"#!lua\n").unwrap_err(),
            "Library name was not given"
        );
        assert_eq!(
            metadata(b"#!lua name=a name=b\n").unwrap_err(),
            "Invalid metadata value, name argument was given multiple times"
        );
        assert_eq!(
            metadata(b"#!lua name=a foo=bar\n").unwrap_err(),
            "Invalid metadata value given: foo=bar"
        );
        let (engine, name, start) = metadata(b"#!LUA name=lib\nx").unwrap();
        assert_eq!((engine.as_str(), name.as_str(), start), ("LUA", "lib", 14));
    }
}

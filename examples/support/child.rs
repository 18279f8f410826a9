//! The engine's RESP server in a process of its own, for the benchmarks
//! that compare it with a redis-server (which is a process of its own too):
//! the benchmark starts itself again with `--serve`, and reads the port
//! the child prints.

use std::future::Future;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, ExitCode, Stdio};

use redmodel::memory::{serve, Engine};

/// The flag that makes a benchmark serve instead of measure.
pub const SERVE_FLAG: &str = "--serve";

/// The child process serving a fresh engine; killed when dropped.
pub struct EngineProcess {
    child: Child,
    port: u16,
}

impl EngineProcess {
    /// Starts this program again with [`SERVE_FLAG`] (its `main` must
    /// call [`serve_until_stdin_closes`] then) and waits for its port.
    pub fn start() -> Result<EngineProcess, String> {
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        let mut child = Command::new(exe)
            .arg(SERVE_FLAG)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start our server: {e}"))?;
        let mut line = String::new();
        if let Some(out) = child.stdout.take() {
            BufReader::new(out)
                .read_line(&mut line)
                .map_err(|e| e.to_string())?;
        }
        let port = line
            .trim()
            .parse()
            .map_err(|_| format!("our server printed {line:?}, not a port"))?;
        Ok(EngineProcess { child, port })
    }

    /// The loopback port it serves on.
    pub fn port(&self) -> u16 {
        self.port
    }
}

impl Drop for EngineProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// [`SERVE_FLAG`]'s side: serve a fresh engine on a free port, print the
/// port, stop when standard input closes (the parent went away).
pub async fn serve_until_stdin_closes() -> ExitCode {
    let server = match serve(Engine::new(), "127.0.0.1:0").await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("cannot serve: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!("{}", server.local_addr().port());
    let parent_gone = tokio::task::spawn_blocking(|| {
        let mut sink = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin(), &mut sink)
    });
    let _ = parent_gone.await;
    server.shutdown().await;
    ExitCode::SUCCESS
}

/// A benchmark's `main`: serves if started with [`SERVE_FLAG`], else runs
/// `bench` with the arguments on the benchmarks' runtime (`bench` gives
/// the message to print for arguments it refuses).
pub fn serve_or_run<Fut: Future<Output = ExitCode>>(
    bench: impl FnOnce(Vec<String>) -> Result<Fut, String>,
) -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // The server on one worker thread, as `memory_server` serves by
    // default (see there why).
    let serving = args.first().map(String::as_str) == Some(SERVE_FLAG);
    let runtime = match crate::bench::runtime_of(if serving { 1 } else { 2 }) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("no tokio runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    if serving {
        return runtime.block_on(serve_until_stdin_closes());
    }
    match bench(args) {
        Ok(run) => runtime.block_on(run),
        Err(msg) => {
            eprintln!("{msg}");
            ExitCode::from(2)
        }
    }
}

//! A blocking RESP client for the RESP server's unit tests: writes
//! inline commands, reads replies one by one with redis-rs's parser.

use std::io::{BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use redis::Value;

pub(crate) struct Client {
    writer: TcpStream,
    reader: BufReader<TcpStream>,
    /// One parser for the connection: it keeps what it read ahead.
    parser: redis::Parser,
}

impl Client {
    pub(crate) fn connect(addr: SocketAddr) -> Client {
        let writer = TcpStream::connect(addr).unwrap();
        writer
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let reader = BufReader::new(writer.try_clone().unwrap());
        Client {
            writer,
            reader,
            parser: redis::Parser::new(),
        }
    }

    /// The server's address.
    pub(crate) fn server(&self) -> SocketAddr {
        self.writer.peer_addr().unwrap()
    }

    /// Writes raw bytes, as they are.
    pub(crate) fn write_raw(&mut self, bytes: &[u8]) {
        self.writer.write_all(bytes).unwrap();
    }

    pub(crate) fn send(&mut self, line: &str) {
        self.writer
            .write_all(format!("{line}\r\n").as_bytes())
            .unwrap();
    }

    pub(crate) fn read(&mut self) -> Value {
        self.parser.parse_value(&mut self.reader).unwrap()
    }

    pub(crate) fn call(&mut self, line: &str) -> Value {
        self.send(line);
        self.read()
    }
}

/// Runs `body` with two clients of a server of `engine`, on a blocking
/// thread (the clients block), and shuts the server down after.
pub(crate) async fn with_clients(
    engine: crate::Engine,
    body: impl FnOnce(Client, Client) + Send + 'static,
) {
    let server = super::serve(engine, "127.0.0.1:0").await.unwrap();
    let addr = server.local_addr();
    tokio::task::spawn_blocking(move || body(Client::connect(addr), Client::connect(addr)))
        .await
        .unwrap();
    server.shutdown().await;
}

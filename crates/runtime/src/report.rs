//! The runtime's reports: a datagram socket in the abstract namespace whose
//! name the library finds in `$SYSCLUSTER_REPORT`.  Each line is
//! `syscluster-runtime/1 TAB kind TAB pid TAB comm TAB text`; kinds are
//! `unchanged` (cannot interpose, or gave up), `lost` (a deferred write
//! failed and nothing could report it) and `stats` (with -v).

use std::collections::HashSet;
use std::io;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixDatagram};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

pub struct Reporter {
    name: String,
    sock: Arc<UnixDatagram>,
    done: Arc<AtomicBool>,
    seen: Arc<Mutex<HashSet<String>>>,
    verbose: bool,
    thread: Option<JoinHandle<()>>,
}

impl Reporter {
    pub fn start(verbose: bool) -> io::Result<Reporter> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let name = format!("syscluster-run-{}-{nanos:x}", std::process::id());
        let sock = UnixDatagram::bind_addr(&SocketAddr::from_abstract_name(name.as_bytes())?)?;
        sock.set_read_timeout(Some(Duration::from_millis(100)))?;
        let sock = Arc::new(sock);
        let done = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(Mutex::new(HashSet::new()));
        let thread = {
            let (sock, done, seen) = (sock.clone(), done.clone(), seen.clone());
            std::thread::spawn(move || {
                let mut buf = [0u8; 2048];
                while !done.load(Ordering::Relaxed) {
                    if let Ok(n) = sock.recv(&mut buf) {
                        show(&buf[..n], verbose, &seen);
                    }
                }
            })
        };
        Ok(Reporter {
            name,
            sock,
            done,
            seen,
            verbose,
            thread: Some(thread),
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Stops listening, after printing whatever is still queued.
    pub fn finish(mut self) {
        self.done.store(true, Ordering::Relaxed);
        // Wake the listener now rather than at its next timeout.
        if let Ok(addr) = SocketAddr::from_abstract_name(self.name.as_bytes()) {
            if let Ok(s) = UnixDatagram::unbound() {
                let _ = s.send_to_addr(b"", &addr);
            }
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let _ = self.sock.set_nonblocking(true);
        let mut buf = [0u8; 2048];
        while let Ok(n) = self.sock.recv(&mut buf) {
            show(&buf[..n], self.verbose, &self.seen);
        }
    }
}

fn show(msg: &[u8], verbose: bool, seen: &Mutex<HashSet<String>>) {
    let text = String::from_utf8_lossy(msg);
    let mut f = text.trim_end().splitn(5, '\t');
    let (Some("syscluster-runtime/1"), Some(kind), Some(pid), Some(comm), Some(what)) =
        (f.next(), f.next(), f.next(), f.next(), f.next())
    else {
        return;
    };
    match kind {
        "stats" if verbose => eprintln!("syscluster run: {comm}[{pid}]: {what}"),
        "stats" => {}
        _ => {
            // Once per distinct report, however many processes make it.
            if seen
                .lock()
                .map(|mut s| s.insert(format!("{kind}\t{what}")))
                .unwrap_or(true)
            {
                if verbose {
                    eprintln!("syscluster run: {comm}[{pid}]: {what}");
                } else {
                    eprintln!("syscluster run: {what}");
                }
            }
        }
    }
}

//! The runtime's reports: a datagram socket in the abstract namespace whose
//! name the library finds in `$SYSCLUSTER_REPORT`.  Each line is
//! `syscluster-runtime/1 TAB kind TAB pid TAB comm TAB text`; kinds are
//! `unchanged` (cannot interpose, or gave up), `lost` (a deferred write
//! failed and nothing could report it) and `stats` (with -v).
//!
//! No thread listens: the supervisor's one thread waits for the program
//! and for reports at once ([`Reporter::wait_for`]), which spares a thread
//! start (and its stack) per run.

use std::collections::HashSet;
use std::io;
use std::os::fd::AsRawFd;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixDatagram};

pub struct Reporter {
    name: String,
    sock: UnixDatagram,
    seen: HashSet<String>,
    verbose: bool,
}

impl Reporter {
    pub fn start(verbose: bool) -> io::Result<Reporter> {
        let nanos =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
        let name = format!("syscluster-run-{}-{nanos:x}", std::process::id());
        let sock = UnixDatagram::bind_addr(&SocketAddr::from_abstract_name(name.as_bytes())?)?;
        sock.set_nonblocking(true)?;
        Ok(Reporter { name, sock, seen: HashSet::new(), verbose })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Prints every report queued now.
    fn drain(&mut self) {
        let mut buf = [0u8; 2048];
        while let Ok(n) = self.sock.recv(&mut buf) {
            show(&buf[..n], self.verbose, &mut self.seen);
        }
    }

    /// Waits for the child `pid` to end, printing reports as they come;
    /// returns its wait status.
    pub fn wait_for(&mut self, pid: libc::pid_t) -> io::Result<i32> {
        // A pidfd becomes readable when the child has ended.  Without one
        // (a kernel before 5.3, a seccomp filter), the child is polled.
        let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as libc::c_int;
        loop {
            let mut fds = [
                libc::pollfd { fd: self.sock.as_raw_fd(), events: libc::POLLIN, revents: 0 },
                libc::pollfd { fd: pidfd, events: libc::POLLIN, revents: 0 },
            ];
            let (n, timeout) = if pidfd >= 0 { (2, -1) } else { (1, 20) };
            unsafe { libc::poll(fds.as_mut_ptr(), n, timeout) };
            if fds[0].revents != 0 {
                self.drain();
            }
            if pidfd < 0 || fds[1].revents != 0 {
                let mut status = 0;
                let flags = if pidfd < 0 { libc::WNOHANG } else { 0 };
                let r = unsafe { libc::waitpid(pid, &mut status, flags) };
                if r == pid {
                    if pidfd >= 0 {
                        unsafe { libc::close(pidfd) };
                    }
                    return Ok(status);
                }
                let e = io::Error::last_os_error();
                if r != 0 && e.kind() != io::ErrorKind::Interrupted {
                    if pidfd >= 0 {
                        unsafe { libc::close(pidfd) };
                    }
                    return Err(e);
                }
            }
        }
    }

    /// Prints whatever is still queued, and stops listening.
    pub fn finish(mut self) {
        self.drain();
    }
}

fn show(msg: &[u8], verbose: bool, seen: &mut HashSet<String>) {
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
        // Once per distinct report, however many processes make it.
        _ if seen.insert(format!("{kind}\t{what}")) => {
            if verbose {
                eprintln!("syscluster run: {comm}[{pid}]: {what}");
            } else {
                eprintln!("syscluster run: {what}");
            }
        }
        _ => {}
    }
}

//! Reading the tracee's memory: one `process_vm_readv` per read, never a
//! word-by-word PTRACE_PEEKDATA loop.

use std::io;

/// Longest path the kernel accepts (PATH_MAX, terminating NUL included).
pub const PATH_MAX: usize = 4096;

/// Reads from `addr` in process `pid` into `buf`; returns the bytes read.
/// The kernel copies page by page and stops at the first page it cannot
/// read, returning what it copied (checked on 6.18: 100 of 1,024 bytes
/// asked for 100 bytes before an unmapped page), so a string ending just
/// before an unmapped page is still read.  This is the one reader of
/// another process's memory: the unwinder's windows use it too.
pub fn read_upto(pid: i32, addr: u64, buf: &mut [u8]) -> io::Result<usize> {
    if addr == 0 || buf.is_empty() {
        return Ok(0);
    }
    let local = libc::iovec { iov_base: buf.as_mut_ptr() as *mut libc::c_void, iov_len: buf.len() };
    let remote = libc::iovec { iov_base: addr as usize as *mut libc::c_void, iov_len: buf.len() };
    let r = unsafe { libc::process_vm_readv(pid, &local, 1, &remote, 1, 0) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(r as usize)
}

/// Reads the NUL-terminated string at `addr` into `buf` (cleared first),
/// without its NUL. Returns false if nothing could be read; a string
/// longer than [`PATH_MAX`] is cut there.
pub fn read_cstr(pid: i32, addr: u64, buf: &mut Vec<u8>) -> bool {
    buf.clear();
    buf.resize(PATH_MAX, 0);
    let n = read_upto(pid, addr, buf).unwrap_or(0);
    let end = memchr::memchr(0, &buf[..n]).unwrap_or(n);
    buf.truncate(end);
    n > 0
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: u64 = 4096;

    #[test]
    fn reads_strings_up_to_an_unmapped_page() {
        // Two pages, the second unmapped: a string that ends on the first
        // page's last byte must still be read whole.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                2 * PAGE as usize,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(base, libc::MAP_FAILED);
        unsafe { libc::munmap((base as usize + PAGE as usize) as *mut _, PAGE as usize) };
        let text = b"/tmp/near-the-edge";
        let at = base as usize + PAGE as usize - text.len() - 1;
        unsafe {
            std::ptr::copy_nonoverlapping(text.as_ptr(), at as *mut u8, text.len());
            *((at + text.len()) as *mut u8) = 0;
        }
        let me = std::process::id() as i32;
        let mut buf = Vec::new();
        assert!(read_cstr(me, at as u64, &mut buf));
        assert_eq!(buf, text);
        // An unterminated string running into the hole is cut there.
        unsafe { *((at + text.len()) as *mut u8) = b'x' };
        assert!(read_cstr(me, at as u64, &mut buf));
        assert_eq!(buf.len(), text.len() + 1);
        assert!(!read_cstr(me, 0, &mut buf));
        unsafe { libc::munmap(base, PAGE as usize) };
    }
}

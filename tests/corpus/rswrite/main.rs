// Writes N records of 8 bytes to OUT through std::fs::File, one write(2)
// each: the code location of every write is this file's write_all line
// (marked RSWRITE), not Rust's std.
use std::io::Write;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 3 {
        eprintln!("usage: rswrite OUT N");
        std::process::exit(2);
    }
    let n: u64 = args[2].parse().unwrap_or_else(|e| {
        eprintln!("rswrite: {}: {e}", args[2]);
        std::process::exit(2)
    });
    let mut f = std::fs::File::create(&args[1]).unwrap_or_else(|e| {
        eprintln!("rswrite: {}: {e}", args[1]);
        std::process::exit(1)
    });
    for _ in 0..n {
        if let Err(e) = f.write_all(b"record.\n") { // RSWRITE
            eprintln!("rswrite: {e}");
            std::process::exit(1);
        }
    }
}

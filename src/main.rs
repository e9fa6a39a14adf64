//! The `syscluster` command: everything lives in `crates/cli`.
fn main() {
    std::process::exit(syscluster_cli::main());
}

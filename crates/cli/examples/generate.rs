//! Writes the manual pages and the shell completions of `syscluster`,
//! generated from the one flag table (`syscluster_cli::flags::Cli`), so they
//! never say something the binary does not do:
//!
//!   generate man DIR           DIR/syscluster.1, one DIR/syscluster-SUB.1 per subcommand
//!   generate completions DIR   DIR/syscluster.bash, DIR/_syscluster (zsh), DIR/syscluster.fish
//!
//! `make install` runs it (`cargo run --example generate -p syscluster-cli`).

use clap::CommandFactory;
use clap_complete::Shell;
use std::path::Path;
use syscluster_cli::flags::Cli;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let code = match args.as_slice() {
        [what, dir] => match generate(what, Path::new(dir)) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("generate: {e}");
                1
            }
        },
        _ => {
            eprintln!("usage: generate man|completions DIR");
            2
        }
    };
    std::process::exit(code);
}

fn generate(what: &str, dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    match what {
        // One page per subcommand (syscluster-record.1, …) and one for the
        // command; the help subcommand gets none.
        "man" => clap_mangen::generate_to(Cli::command(), dir)
            .map_err(|e| format!("cannot write the manual pages into {}: {e}", dir.display())),
        "completions" => {
            for (shell, file) in
                [(Shell::Bash, "syscluster.bash"), (Shell::Zsh, "_syscluster"), (Shell::Fish, "syscluster.fish")]
            {
                let path = dir.join(file);
                let mut out =
                    std::fs::File::create(&path).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
                clap_complete::generate(shell, &mut Cli::command(), "syscluster", &mut out);
            }
            Ok(())
        }
        other => Err(format!("unknown output {other:?}: man or completions")),
    }
}

pub fn main() -> i32 { eprintln!("syscluster: the command line is not built yet"); 2 }

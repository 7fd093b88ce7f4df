//! Parses PTX files given on the command line and reports their entries or the error:
//! `cargo run -p warpscope-emulator --example parse_check -- a.ptx b.ptx`.

fn main() {
    for path in std::env::args().skip(1) {
        match std::fs::read_to_string(&path) {
            Ok(text) => match emulator::Module::parse(&text) {
                Ok(m) => println!("{path}: ok, {} entries", m.entries().len()),
                Err(e) => println!("{path}: {e}"),
            },
            Err(e) => println!("{path}: cannot read: {e}"),
        }
    }
}

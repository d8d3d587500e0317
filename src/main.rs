//! The `nac` binary: parses the command line and hands over to [`nac::cli`].
#![forbid(unsafe_code)]

fn main() -> std::process::ExitCode {
    nac::cli::main()
}

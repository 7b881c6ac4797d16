//! `toolsmith`: the command-line interface. Everything happens in [`toolsmith::cli`].

fn main() -> std::process::ExitCode {
    toolsmith::registry::tune_git();
    toolsmith::cli::main()
}

//! `toolsmithd`: the daemon. Everything happens in [`toolsmith::daemon`].

fn main() -> std::process::ExitCode {
    toolsmith::daemon::main()
}

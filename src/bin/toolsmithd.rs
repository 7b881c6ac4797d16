//! `toolsmithd`: the daemon. Everything happens in [`toolsmith::daemon`].

fn main() -> std::process::ExitCode {
    // Nothing before this: the daemon runs tools through its own binary started again as the
    // sandbox helper, which must start single-threaded and fast, with no library, runtime or
    // TLS initialised on its path.
    if let Some(code) = toolsmith::sandbox::helper_main() {
        return code;
    }
    toolsmith::daemon::main()
}

//! `toolsmithd`: the daemon. Everything happens in [`toolsmith::daemon`].

fn main() -> std::process::ExitCode {
    // The daemon runs tools through its own binary started again as the sandbox helper, which
    // must stay single-threaded: it is dispatched before the daemon starts any thread.
    if let Some(code) = toolsmith::sandbox::helper_main() {
        return code;
    }
    toolsmith::registry::tune_git();
    toolsmith::daemon::main()
}

//! `toolsmith`: the command-line interface. Everything happens in [`toolsmith::cli`].

fn main() -> std::process::ExitCode {
    // Nothing before this: the sandbox helper (this binary started again) must start
    // single-threaded and fast, with no library, runtime or TLS initialised on its path.
    if let Some(code) = toolsmith::sandbox::helper_main() {
        return code;
    }
    toolsmith::cli::main()
}

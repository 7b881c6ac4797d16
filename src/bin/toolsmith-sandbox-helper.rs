//! `toolsmith-sandbox-helper`: the sandbox helper alone ([`toolsmith::sandbox::helper_main`]),
//! which `toolsmith` and `toolsmithd` start for every sandboxed run when it lies beside them.
//! It links only what the helper uses (no git, no TLS, no runtime), so it starts in a fraction
//! of their time; without it, they start themselves again as the helper.

fn main() -> std::process::ExitCode {
    match toolsmith::sandbox::helper_main() {
        Some(code) => code,
        None => {
            eprintln!(
                "toolsmith-sandbox-helper: started by toolsmith for each sandboxed run, under \
                 this name, with its request on a pipe; it is not run by hand (try `toolsmith \
                 sandbox -- CMD`)"
            );
            std::process::ExitCode::from(125)
        }
    }
}

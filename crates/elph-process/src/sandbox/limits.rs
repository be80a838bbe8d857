//! Resource limits of sandboxed processes (`sandbox.limits` in settings.json).
//!
//! A command the model runs should not be able to fill the disk with one file, exhaust the
//! machine's processes with a fork bomb, or spin forever. The limits are the kernel's own
//! (`setrlimit`), set in the child before it executes the command and inherited by everything it
//! starts. The defaults are far above what a normal build or test run needs; the ones that would
//! break ordinary tools are off unless the user sets them (see [`Limits::default`]).

use std::fmt;

/// The bounds of one sandboxed process and its descendants. `None` leaves the limit Elph has.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Limits {
    /// The largest file a process may write, in bytes (`RLIMIT_FSIZE`): a bigger write fails
    /// with `EFBIG`.
    pub file_size: Option<u64>,
    /// The largest address space of one process, in bytes (`RLIMIT_AS`).
    pub address_space: Option<u64>,
    /// The most processes and threads the sandbox's user may have at once (`RLIMIT_NPROC`; counted
    /// within the sandbox's user namespace when it has one).
    pub processes: Option<u64>,
    /// The CPU time of one process, in seconds (`RLIMIT_CPU`): past it the process is killed.
    pub cpu_seconds: Option<u64>,
}

impl Default for Limits {
    /// 64 GiB per file and 16,384 processes. No address-space or CPU limit: sanitizers, the JVM,
    /// Go and WebAssembly runtimes reserve terabytes of address space they never use, and a long
    /// test run is bounded by the command's timeout, not by its CPU time.
    fn default() -> Self {
        Limits {
            file_size: Some(64 << 30),
            address_space: None,
            processes: Some(16_384),
            cpu_seconds: None,
        }
    }
}

impl Limits {
    /// Sets each limit in the calling process (soft and hard, never above the hard limit it
    /// already has). Runs in the child before exec: system calls only.
    pub(crate) fn apply_in_child(&self) -> std::io::Result<()> {
        use nix::sys::resource::{Resource, getrlimit, setrlimit};
        for (resource, value) in [
            (Resource::RLIMIT_FSIZE, self.file_size),
            (Resource::RLIMIT_AS, self.address_space),
            (Resource::RLIMIT_NPROC, self.processes),
            (Resource::RLIMIT_CPU, self.cpu_seconds),
        ] {
            let Some(value) = value else { continue };
            let (_, hard) = getrlimit(resource)?;
            // Past the CPU limit a process gets SIGXCPU, which it may catch to clean up, and
            // SIGKILL a second later; at the other limits the soft one is the hard one.
            let ceiling = match resource {
                Resource::RLIMIT_CPU => value.saturating_add(1),
                _ => value,
            };
            setrlimit(resource, value.min(hard), ceiling.min(hard))?;
        }
        Ok(())
    }

    /// One line per limit, for `elph sandbox --explain` and `elph doctor`.
    pub fn describe(&self) -> String {
        struct Bytes(Option<u64>);
        impl fmt::Display for Bytes {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self.0 {
                    None => f.write_str("none"),
                    Some(bytes) if bytes >= 1 << 30 && bytes % (1 << 30) == 0 => {
                        write!(f, "{} GiB", bytes >> 30)
                    }
                    Some(bytes) if bytes >= 1 << 20 && bytes % (1 << 20) == 0 => {
                        write!(f, "{} MiB", bytes >> 20)
                    }
                    Some(bytes) => write!(f, "{bytes} bytes"),
                }
            }
        }
        let count = |value: Option<u64>| value.map_or_else(|| "none".to_string(), |n| n.to_string());
        format!(
            "limits: file size {}, address space {}, processes {}, CPU seconds {}",
            Bytes(self.file_size),
            Bytes(self.address_space),
            count(self.processes),
            count(self.cpu_seconds)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_say_what_they_are() {
        assert_eq!(
            Limits::default().describe(),
            "limits: file size 64 GiB, address space none, processes 16384, CPU seconds none"
        );
        let small = Limits {
            file_size: Some(1 << 20),
            address_space: Some(1000),
            processes: None,
            cpu_seconds: Some(5),
        };
        assert_eq!(
            small.describe(),
            "limits: file size 1 MiB, address space 1000 bytes, processes none, CPU seconds 5"
        );
    }
}

//! The sandbox holds as root and as a user, on a terminal, and against local sockets: each test
//! tries what an attacker would, through the real `elph` binary (`elph run` with a fake model
//! that asks for the command, or `elph sandbox`), on the real kernel, once as root and once as a
//! user who is not (see `sandbox_users`). Where it can, a control runs the same attempt
//! unconfined and shows that it would have worked.

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use portable_pty::{CommandBuilder, PtySize, native_pty_system};
use test_support::env::TestEnv;

use super::sandbox_e2e::landlock;
use super::sandbox_users::{Who, elph_as, everyone, output, program_as, shell_as, text};

#[tokio::test]
async fn no_secret_from_elphs_environ_or_memory_or_another_processs_environ() {
    let test = "no_secret_from_elphs_environ_or_memory_or_another_processs_environ";
    if !landlock(test) {
        return;
    }
    for who in everyone(test) {
        let env = TestEnv::new();
        // A process of the same user holding a secret in its environment (the user's own shell).
        let mut victim = program_as(&env, who, "/bin/sleep");
        victim.arg("60").env("VICTIM_SECRET", "victim-secret-value");
        let mut victim = victim.spawn().unwrap();
        let script = format!(
            "tr '\\0' '\\n' < /proc/$PPID/environ; echo \"elph=$?\"; \
             head -c 4096 /proc/$PPID/mem > /dev/null; echo \"mem=$?\"; \
             tr '\\0' '\\n' < /proc/{victim}/environ; echo \"other=$?\"",
            victim = victim.id()
        );
        let (result, out) = shell_as(&env, who, &script, &[], &[]).await;
        let (control, _) = shell_as(&env, who, &script, &[], &["--sandbox", "full-access"]).await;
        let _ = victim.kill();
        let _ = victim.wait();
        assert!(out.status.success(), "{who:?}: {}", text(&out.stderr));
        assert!(result.contains("other="), "{who:?}: the command ran: {result}");
        for secret in ["sk-test-secret-key", "victim-secret-value"] {
            assert!(!result.contains(secret), "{who:?}: {secret} leaked: {result}");
        }
        for read in ["elph=0", "mem=0", "other=0"] {
            assert!(!result.contains(read), "{who:?}: {read}: {result}");
        }
        // Unconfined, the same user reads the other process: the attempt is a real one.
        assert!(
            control.contains("victim-secret-value"),
            "{who:?}: control: {control}"
        );
    }
}

#[test]
fn no_device_nodes_no_ownership_changes_and_no_capabilities() {
    let test = "no_device_nodes_no_ownership_changes_and_no_capabilities";
    if !landlock(test) {
        return;
    }
    for who in everyone(test) {
        let env = TestEnv::new();
        let script = "mknod null-copy c 1 3; echo \"char=$?\"; mknod disk b 8 0; echo \"block=$?\"; \
                      touch mine; chown 1:1 mine; echo \"chown=$?\"; \
                      grep -E '^Cap(Eff|Prm|Bnd|Amb)' /proc/self/status";
        let mut command = elph_as(&env, who);
        command.args(["sandbox", "--", "sh", "-c", script]);
        let out = text(&output(command).stdout);
        for refused in ["char=0", "block=0", "chown=0"] {
            assert!(!out.contains(refused), "{who:?}: {refused}: {out}");
        }
        assert!(out.contains("chown="), "{who:?}: {out}");
        assert!(!env.project.join("null-copy").exists() && !env.project.join("disk").exists());
        for set in ["CapEff", "CapPrm", "CapBnd", "CapAmb"] {
            assert!(
                out.contains(&format!("{set}:\t0000000000000000")),
                "{who:?}: {set}: {out}"
            );
        }
        if who == Who::Root {
            // Unconfined, root makes the device: the attempt is a real one.
            let mut command = elph_as(&env, who);
            command.args(["sandbox", "--mode", "full-access", "--", "sh", "-c", script]);
            assert!(text(&output(command).stdout).contains("char=0"));
        }
    }
}

/// A probe that pushes `echo INJECTED` into its terminal's input with TIOCSTI, through its stdin
/// and through /dev/tty, and says how many bytes went in.
const TIOCSTI_PROBE: &str = r#"
import fcntl, os, termios
sent = 0
fds = [0]
try:
    fds.append(os.open("/dev/tty", os.O_RDWR))
except OSError as error:
    print("no /dev/tty:", error.strerror, flush=True)
for fd in fds:
    for byte in b"echo INJECTED\n":
        try:
            fcntl.ioctl(fd, termios.TIOCSTI, bytes([byte]))
            sent += 1
        except OSError as error:
            failure = error.strerror
            break
print("sent", sent, flush=True)
"#;

#[test]
fn elph_sandbox_on_a_terminal_cannot_type_into_the_calling_shell() {
    let test = "elph_sandbox_on_a_terminal_cannot_type_into_the_calling_shell";
    if !landlock(test) {
        return;
    }
    for who in everyone(test) {
        let env = TestEnv::new();
        let probe = env.root.path().join("probe.py");
        std::fs::write(&probe, TIOCSTI_PROBE).unwrap();
        std::fs::set_permissions(&probe, std::fs::Permissions::from_mode(0o644)).unwrap();
        let screen = typed_after(&env, who, &[], &probe);
        assert!(screen.contains("got:[clean]"), "{who:?}: {screen}");
        assert!(screen.contains("sent 0"), "{who:?}: {screen}");
        // A session of its own: the terminal is not its controlling terminal.
        assert!(screen.contains("no /dev/tty"), "{who:?}: {screen}");
        if who == Who::Root {
            // Unconfined, root (CAP_SYS_ADMIN) injects through the same terminal.
            let control = typed_after(&env, who, &["--mode", "full-access"], &probe);
            assert!(control.contains("got:[echo INJECTED]"), "control: {control}");
        }
    }
}

/// Runs `elph sandbox ARGS -- python3 PROBE` in a shell on a real pty, then the shell's next
/// `read`, after which the test types `clean`: what the read got shows whether the probe typed
/// first.
fn typed_after(env: &TestEnv, who: Who, args: &[&str], probe: &std::path::Path) -> String {
    let pty = native_pty_system()
        .openpty(PtySize {
            rows: 24,
            cols: 200,
            pixel_width: 0,
            pixel_height: 0,
        })
        .unwrap();
    let elph = elph_as(env, who);
    let mut words: Vec<String> = std::iter::once(elph.get_program())
        .chain(elph.get_args())
        .map(|word| format!("'{}'", word.to_string_lossy()))
        .collect();
    words.push("sandbox".into());
    words.extend(args.iter().map(|arg| (*arg).to_string()));
    words.extend(["--".into(), "python3".into(), format!("'{}'", probe.display())]);
    let script = format!(
        "{}; echo probe-done; IFS= read -r line; echo \"got:[$line]\"",
        words.join(" ")
    );
    let mut command = CommandBuilder::new("/bin/sh");
    command.args(["-c", &script]);
    command.cwd(&env.project);
    command.env_clear();
    for (name, value) in elph.get_envs() {
        if let Some(value) = value {
            command.env(name, value);
        }
    }
    let mut child = pty.slave.spawn_command(command).unwrap();
    drop(pty.slave);
    let seen = Arc::new(Mutex::new(String::new()));
    let mut reader = pty.master.try_clone_reader().unwrap();
    let sink = Arc::clone(&seen);
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 {
                break;
            }
            sink.lock().unwrap().push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    let wait_for = |needle: &str| {
        let deadline = Instant::now() + Duration::from_secs(40);
        while !seen.lock().unwrap().contains(needle) {
            assert!(
                Instant::now() < deadline,
                "waited for {needle:?}: {}",
                seen.lock().unwrap()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    wait_for("probe-done");
    let mut writer = pty.master.take_writer().unwrap();
    writer.write_all(b"clean\n").unwrap();
    wait_for("got:[");
    let deadline = Instant::now() + Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "the shell ended");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(50));
    seen.lock().unwrap().clone()
}

#[tokio::test]
async fn unix_sockets_outside_are_out_of_reach_unless_allowed_and_socketpair_works() {
    let test = "unix_sockets_outside_are_out_of_reach_unless_allowed_and_socketpair_works";
    if !landlock(test) {
        return;
    }
    for who in everyone(test) {
        let env = TestEnv::new();
        // An ssh-agent-like socket in a folder outside the project, open to every user.
        let folder = env.root.path().join("agent");
        std::fs::create_dir(&folder).unwrap();
        std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o755)).unwrap();
        let socket = folder.join("agent.sock");
        let listener = UnixListener::bind(&socket).unwrap();
        listener.set_nonblocking(true).unwrap();
        std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o777)).unwrap();
        let abstract_name = format!("elph-test-{}", std::process::id());
        let abstract_listener = {
            use std::os::linux::net::SocketAddrExt;
            let address = std::os::unix::net::SocketAddr::from_abstract_name(&abstract_name).unwrap();
            let listener = UnixListener::bind_addr(&address).unwrap();
            listener.set_nonblocking(true).unwrap();
            listener
        };
        let script = format!(
            "python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect('{path}'); print('connected')\"; \
             python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect('\\0{abstract_name}'); print('abstract connected')\"; \
             python3 -c \"import socket; a, b = socket.socketpair(); a.send(b'x'); print('pair', b.recv(1))\"; \
             env | grep -E '^(TMUX|STY|DBUS_SESSION_BUS_ADDRESS|VSCODE_IPC_HOOK|SSH_AUTH_SOCK)' ; echo vars-listed",
            path = socket.display()
        );
        let socket_text = socket.display().to_string();
        let vars = [
            ("TMUX", "/tmp/tmux-0/default,4242,0"),
            ("STY", "4242.pts-0.host"),
            ("DBUS_SESSION_BUS_ADDRESS", "unix:path=/run/user/0/bus"),
            ("VSCODE_IPC_HOOK_CLI", "/run/user/0/vscode-ipc.sock"),
            ("SSH_AUTH_SOCK", socket_text.as_str()),
        ];
        let (result, out) = shell_as(&env, who, &script, &vars, &[]).await;
        assert!(out.status.success(), "{who:?}: {}", text(&out.stderr));
        assert!(result.contains("vars-listed"), "{who:?}: {result}");
        assert!(
            listener.accept().is_err(),
            "{who:?}: reached the socket: {result}"
        );
        assert!(abstract_listener.accept().is_err(), "{who:?}: {result}");
        assert!(!result.contains("connected"), "{who:?}: {result}");
        assert!(
            result.contains("pair b'x'"),
            "{who:?}: socketpair works: {result}"
        );
        for name in ["TMUX=", "STY=", "DBUS_SESSION", "VSCODE_IPC", "SSH_AUTH_SOCK="] {
            assert!(!result.contains(name), "{who:?}: {name} passed: {result}");
        }

        // Listed in sandbox.allowUnixSockets: the agent is reachable, and SSH_AUTH_SOCK passed.
        std::fs::write(
            env.config_dir.join("settings.json"),
            serde_json::json!({"sandbox": {"allowUnixSockets": [socket_text]}}).to_string(),
        )
        .unwrap();
        let (allowed, out) = shell_as(&env, who, &script, &vars, &[]).await;
        assert!(out.status.success(), "{who:?}: {}", text(&out.stderr));
        assert!(listener.accept().is_ok(), "{who:?}: {allowed}");
        assert!(allowed.contains("SSH_AUTH_SOCK="), "{who:?}: {allowed}");
        assert!(!allowed.contains("TMUX="), "{who:?}: {allowed}");
        // Abstract sockets stay scoped to the sandbox whatever the list says.
        assert!(abstract_listener.accept().is_err(), "{who:?}: {allowed}");
        std::fs::remove_file(env.config_dir.join("settings.json")).unwrap();
    }
}

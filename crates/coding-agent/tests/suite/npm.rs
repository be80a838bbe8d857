//! npm packages the tests run for real (the official ACP TypeScript SDK, MCP's reference
//! servers): installed from npm once per target dir and version, under a lock so that two tests
//! never install at once, and under a deadline.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// npm's install, with its download, may take a while on a busy machine.
const INSTALL_DEADLINE: Duration = Duration::from_secs(300);

/// The folder with `node_modules/PACKAGE` at `version`, installed first if it is not there.
pub fn package_dir(package: &str, version: &str, folder: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{folder}-{version}"));
    std::fs::create_dir_all(&dir).expect("create the package folder");
    let lock = std::fs::File::create(dir.join(".install.lock")).expect("create the install lock");
    lock.lock().expect("lock the package folder");
    let manifest = dir.join("node_modules").join(package).join("package.json");
    let installed = std::fs::read_to_string(&manifest)
        .ok()
        .and_then(|text| serde_json::from_str::<Value>(&text).ok())
        .is_some_and(|manifest| manifest["version"] == version);
    if !installed {
        install(&dir, package, version);
    }
    dir
}

/// `npm install` of `package@version` into `dir`, under a deadline. npm keeps the environment it
/// is given (its registry, proxy and certificates, as for any package manager fetching
/// dependencies); what runs Elph is hermetic.
fn install(dir: &Path, package: &str, version: &str) {
    let mut child = Command::new("npm")
        .args(["install", "--no-audit", "--no-fund", "--no-save", "--prefix"])
        .arg(dir)
        .arg(format!("{package}@{version}"))
        .env("npm_config_update_notifier", "false")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|err| panic!("these tests install {package} with npm, which did not start: {err}"));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > INSTALL_DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            panic!("npm install {package}@{version} took over {INSTALL_DEADLINE:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut stderr = String::new();
    let _ = child.stderr.take().unwrap().read_to_string(&mut stderr);
    assert!(
        status.success(),
        "npm install {package}@{version} failed: {stderr}"
    );
}

//! Acting on exactly the place the policy judged.
//!
//! The policy judges a path on its real location (every link followed, see
//! [`crate::policy::resolve`]); Elph, unconfined, then reads or writes it. Between the two, a
//! sandboxed process can swap a folder on the way for a symbolic link (`renameat2` with
//! `RENAME_EXCHANGE`), and a plain `open` of the path would follow it out of the project. So every
//! native file tool opens through a directory descriptor held for the session — the root the path
//! was judged against — and walks the rest of the real path with `openat2(RESOLVE_BENEATH |
//! RESOLVE_NO_SYMLINKS)`: the real path has no link in it, so a link that appears later makes the
//! open fail (`ELOOP`) instead of redirecting it. A write goes to a temp file in the same directory
//! descriptor, renamed over the name with `renameat` there, and the temp file is removed on failure.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, Write as _};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag, OpenHow, ResolveFlag};
use nix::sys::stat::{FileStat, Mode, SFlag};

/// Directories held open for the session, each by the real path of the root it stands for. A root
/// is opened the first time it is needed (or up front with [`HeldRoots::holding`]) and the same
/// descriptor serves every later call, so renaming the root's path later changes nothing.
#[derive(Debug, Default)]
pub struct HeldRoots {
    held: Mutex<Vec<(PathBuf, Arc<OwnedFd>)>>,
}

impl HeldRoots {
    /// Holds nothing yet: roots are opened when first used.
    pub fn new() -> Self {
        HeldRoots::default()
    }

    /// Opens each of `roots` now; one that cannot be opened yet is tried again when first used.
    pub fn holding<'a>(roots: impl IntoIterator<Item = &'a Path>) -> Self {
        let held = HeldRoots::new();
        for root in roots {
            let _ = held.get(root);
        }
        held
    }

    /// The descriptor of `root` (an absolute, real path).
    pub(crate) fn get(&self, root: &Path) -> io::Result<Arc<OwnedFd>> {
        let mut held = self.held.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some((_, fd)) = held.iter().find(|(path, _)| path == root) {
            return Ok(fd.clone());
        }
        let fd = Arc::new(nix::fcntl::open(
            root,
            OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )?);
        held.push((root.to_path_buf(), fd.clone()));
        Ok(fd)
    }
}

/// A judged path: the held root it was judged against and the rest of the way there, which had no
/// `.`, `..` or symbolic link in it when it was judged.
#[derive(Clone, Debug)]
pub(crate) struct Place {
    root: Arc<OwnedFd>,
    rest: PathBuf,
    real: PathBuf,
}

impl Place {
    /// `real` (a resolved absolute path) under `root` (one of its ancestors, or itself).
    pub fn new(roots: &HeldRoots, root: &Path, real: &Path) -> io::Result<Self> {
        let rest = real
            .strip_prefix(root)
            .map_err(|_| io::Error::other(format!("{} is not under {}", real.display(), root.display())))?;
        if rest
            .components()
            .any(|component| !matches!(component, Component::Normal(_)))
        {
            return Err(io::Error::other(format!(
                "{} is not a resolved path",
                real.display()
            )));
        }
        Ok(Place {
            root: roots.get(root)?,
            rest: rest.to_path_buf(),
            real: real.to_path_buf(),
        })
    }

    /// The real path the place was judged at.
    pub fn real(&self) -> &Path {
        &self.real
    }

    /// The place at `relative` below this one (a path a walk found, with no `.`, `..` or link in
    /// it), opened beneath the same held root.
    pub fn below(&self, relative: &Path) -> Place {
        Place {
            root: self.root.clone(),
            rest: self.rest.join(relative),
            real: self.real.join(relative),
        }
    }

    /// The folder holding the place, opened beneath the root, and the place's own name; `None` for
    /// the name when the place is the root itself.
    fn parent(&self, flags: OFlag) -> io::Result<(OwnedFd, Option<OsString>)> {
        match (self.rest.parent(), self.rest.file_name()) {
            (Some(parent), Some(name)) => {
                let parent = open_beneath(
                    self.root.as_fd(),
                    parent,
                    flags | OFlag::O_DIRECTORY,
                    Mode::empty(),
                )?;
                Ok((parent, Some(name.to_os_string())))
            }
            _ => Ok((
                open_beneath(
                    self.root.as_fd(),
                    Path::new(""),
                    flags | OFlag::O_DIRECTORY,
                    Mode::empty(),
                )?,
                None,
            )),
        }
    }
}

/// Opens `rest` beneath `dir`, never through a symbolic link and never above `dir`. An empty
/// `rest` opens `dir` itself.
fn open_beneath(dir: BorrowedFd<'_>, rest: &Path, flags: OFlag, mode: Mode) -> io::Result<OwnedFd> {
    let rest = if rest.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rest
    };
    // No O_NOFOLLOW here: with it a link at the end is not "followed", so RESOLVE_NO_SYMLINKS
    // would not see it and O_DIRECTORY would say ENOTDIR instead of ELOOP.
    let flags = flags | OFlag::O_CLOEXEC;
    let how = OpenHow::new()
        .flags(flags)
        .mode(mode)
        .resolve(ResolveFlag::RESOLVE_BENEATH | ResolveFlag::RESOLVE_NO_SYMLINKS);
    match nix::fcntl::openat2(dir, rest, how) {
        // Before Linux 5.6 (or where seccomp hides openat2): the same walk, one component at a time.
        Err(Errno::ENOSYS) => open_component_wise(dir, rest, flags, mode),
        other => other.map_err(io::Error::from),
    }
}

fn open_component_wise(dir: BorrowedFd<'_>, rest: &Path, flags: OFlag, mode: Mode) -> io::Result<OwnedFd> {
    let names: Vec<&OsStr> = rest
        .components()
        .filter_map(|component| match component {
            Component::Normal(name) => Some(name),
            _ => None,
        })
        .collect();
    let Some((last, folders)) = names.split_last() else {
        return Ok(nix::fcntl::openat(dir, ".", flags, mode)?);
    };
    let mut current: Option<OwnedFd> = None;
    for folder in folders {
        let from = current.as_ref().map_or(dir, AsFd::as_fd);
        let next = nix::fcntl::openat(
            from,
            *folder,
            OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::empty(),
        )?;
        current = Some(next);
    }
    let from = current.as_ref().map_or(dir, AsFd::as_fd);
    match nix::fcntl::openat(from, *last, flags | OFlag::O_NOFOLLOW, mode) {
        // O_DIRECTORY on a link says ENOTDIR: say what it is.
        Err(Errno::ENOTDIR) if kind_of(from, last).is_ok_and(|stat| file_type(&stat) == SFlag::S_IFLNK) => {
            Err(io::Error::from(Errno::ELOOP))
        }
        other => Ok(other?),
    }
}

/// What a place is, without following a link at its end.
fn kind_of(parent: BorrowedFd<'_>, name: &OsStr) -> io::Result<FileStat> {
    Ok(nix::sys::stat::fstatat(
        parent,
        name,
        AtFlags::AT_SYMLINK_NOFOLLOW,
    )?)
}

fn file_type(stat: &FileStat) -> SFlag {
    SFlag::from_bits_truncate(stat.st_mode & SFlag::S_IFMT.bits())
}

/// Why a place was not opened as a regular file.
#[derive(Debug)]
pub(crate) enum OpenError {
    Io(io::Error),
    /// A FIFO, socket, or device: reading it could block forever or never end.
    Special,
    Directory,
}

/// Opens a regular file for reading without ever blocking: its kind is checked before the open (a
/// socket cannot be opened at all, a device must not be) and again on the opened file, and the
/// open does not wait for a FIFO's writer.
pub(crate) fn open_regular(place: &Place) -> Result<File, OpenError> {
    let (parent, name) = place.parent(OFlag::O_PATH).map_err(OpenError::Io)?;
    open_regular_in(parent.as_fd(), name.as_deref())
}

/// [`open_regular`] for the entry `name` of the open folder `parent` (`None`: the folder itself).
pub(crate) fn open_regular_in(parent: BorrowedFd<'_>, name: Option<&OsStr>) -> Result<File, OpenError> {
    let Some(name) = name else {
        return Err(OpenError::Directory);
    };
    let before = kind_of(parent, name).map_err(OpenError::Io)?;
    match file_type(&before) {
        SFlag::S_IFREG => {}
        SFlag::S_IFDIR => return Err(OpenError::Directory),
        SFlag::S_IFLNK => return Err(OpenError::Io(io::Error::from(Errno::ELOOP))),
        _ => return Err(OpenError::Special),
    }
    let fd = open_beneath(
        parent,
        Path::new(name),
        OFlag::O_RDONLY | OFlag::O_NONBLOCK | OFlag::O_NOCTTY,
        Mode::empty(),
    )
    .map_err(OpenError::Io)?;
    let file = File::from(fd);
    let metadata = file.metadata().map_err(OpenError::Io)?;
    if metadata.is_dir() {
        return Err(OpenError::Directory);
    }
    if !metadata.is_file() {
        return Err(OpenError::Special);
    }
    Ok(file)
}

/// Opens a file a walk found as a regular file, for reading, in one resolution beneath the held
/// root (a link swapped in anywhere on the way fails the open with `ELOOP`). The kind is checked on
/// the opened file; the open does not wait for a FIFO's writer.
pub(crate) fn open_found_file(place: &Place) -> Result<File, OpenError> {
    let fd = open_beneath(
        place.root.as_fd(),
        &place.rest,
        OFlag::O_RDONLY | OFlag::O_NONBLOCK | OFlag::O_NOCTTY,
        Mode::empty(),
    )
    .map_err(OpenError::Io)?;
    let file = File::from(fd);
    let metadata = file.metadata().map_err(OpenError::Io)?;
    if metadata.is_dir() {
        return Err(OpenError::Directory);
    }
    if !metadata.is_file() {
        return Err(OpenError::Special);
    }
    Ok(file)
}

/// Opens a folder for listing.
pub(crate) fn open_dir(place: &Place) -> io::Result<OwnedFd> {
    open_beneath(
        place.root.as_fd(),
        &place.rest,
        OFlag::O_RDONLY | OFlag::O_DIRECTORY,
        Mode::empty(),
    )
}

/// The kind of one folder entry, without following a link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EntryKind {
    File,
    Dir,
    Link,
    Other,
}

/// The entries of the open folder `dir` (not `.` and `..`), each with its kind.
pub(crate) fn entries(dir: &OwnedFd) -> io::Result<Vec<(OsString, EntryKind)>> {
    use nix::dir::{Dir, Type};
    use std::os::unix::ffi::OsStrExt as _;
    let listing = Dir::from_fd(dir.try_clone()?)?;
    let mut found = Vec::new();
    for entry in listing {
        let entry = entry?;
        let name = OsStr::from_bytes(entry.file_name().to_bytes());
        if name == "." || name == ".." {
            continue;
        }
        let kind = match entry.file_type() {
            Some(Type::File) => EntryKind::File,
            Some(Type::Directory) => EntryKind::Dir,
            Some(Type::Symlink) => EntryKind::Link,
            Some(_) => EntryKind::Other,
            // Some file systems leave the kind out of the listing.
            None => match kind_of(dir.as_fd(), name).map(|stat| file_type(&stat)) {
                Ok(SFlag::S_IFREG) => EntryKind::File,
                Ok(SFlag::S_IFDIR) => EntryKind::Dir,
                Ok(SFlag::S_IFLNK) => EntryKind::Link,
                _ => EntryKind::Other,
            },
        };
        found.push((name.to_os_string(), kind));
    }
    Ok(found)
}

/// Whether the entry `name` of `dir` is a folder or leads to one (a link is followed for this
/// one look at its kind, so a link to a folder can be shown as a folder).
pub(crate) fn leads_to_dir(dir: BorrowedFd<'_>, name: &OsStr) -> bool {
    nix::sys::stat::fstatat(dir, name, AtFlags::empty()).is_ok_and(|stat| file_type(&stat) == SFlag::S_IFDIR)
}

/// Whether the place is a folder (`Some(false)`: something else; `None`: nothing is there).
pub(crate) fn is_dir(place: &Place) -> io::Result<Option<bool>> {
    let (parent, name) = place.parent(OFlag::O_PATH)?;
    let Some(name) = name else { return Ok(Some(true)) };
    match kind_of(parent.as_fd(), &name) {
        Ok(stat) => Ok(Some(file_type(&stat) == SFlag::S_IFDIR)),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(error),
    }
}

/// Temp files of one process get distinct names; `O_EXCL` catches any clash with another's.
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Replaces the file at `place` with `bytes` in one step: a temp file in the same folder (held by
/// one descriptor from the walk to the rename), renamed over the name. A reader never sees half a
/// file; a hard link to the old file (which may live anywhere) is not written through, and neither
/// is a link now standing at the name (the rename replaces the link itself). An existing file keeps
/// its permissions; a new one gets 0666 less the umask. With `create_folders`, missing folders on
/// the way are made, each beneath the last. Returns whether a file was there before.
pub(crate) fn replace_file(place: &Place, bytes: &[u8], create_folders: bool) -> io::Result<bool> {
    let (Some(parent_path), Some(name)) = (place.rest.parent(), place.rest.file_name()) else {
        return Err(io::Error::from(Errno::EISDIR));
    };
    let parent = if create_folders {
        make_folders(place.root.as_fd(), parent_path)?
    } else {
        open_beneath(
            place.root.as_fd(),
            parent_path,
            OFlag::O_PATH | OFlag::O_DIRECTORY,
            Mode::empty(),
        )?
    };
    let (existed, permissions) = match kind_of(parent.as_fd(), name) {
        Ok(stat) if file_type(&stat) == SFlag::S_IFDIR => return Err(io::Error::from(Errno::EISDIR)),
        Ok(stat) if file_type(&stat) == SFlag::S_IFREG => (true, Some(stat.st_mode & 0o7777)),
        Ok(_) => (true, None),
        Err(error) if error.kind() == io::ErrorKind::NotFound => (false, None),
        Err(error) => return Err(error),
    };
    let (temp_name, temp) = create_temp(parent.as_fd())?;
    let written = fill(temp, bytes, permissions).and_then(|()| {
        Ok(nix::fcntl::renameat(
            parent.as_fd(),
            temp_name.as_os_str(),
            parent.as_fd(),
            name,
        )?)
    });
    if let Err(error) = written {
        let _ = nix::unistd::unlinkat(
            parent.as_fd(),
            temp_name.as_os_str(),
            nix::unistd::UnlinkatFlags::NoRemoveDir,
        );
        return Err(error);
    }
    Ok(existed)
}

/// Opens (making what is missing) each folder of `path` beneath `root`, one at a time.
fn make_folders(root: BorrowedFd<'_>, path: &Path) -> io::Result<OwnedFd> {
    let mut current = open_beneath(
        root,
        Path::new(""),
        OFlag::O_PATH | OFlag::O_DIRECTORY,
        Mode::empty(),
    )?;
    for component in path.components() {
        let Component::Normal(folder) = component else {
            return Err(io::Error::from(Errno::EINVAL));
        };
        let folder = Path::new(folder);
        let flags = OFlag::O_PATH | OFlag::O_DIRECTORY;
        let next = match open_beneath(current.as_fd(), folder, flags, Mode::empty()) {
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                match nix::sys::stat::mkdirat(current.as_fd(), folder, Mode::from_bits_truncate(0o777)) {
                    Ok(()) | Err(Errno::EEXIST) => {}
                    Err(error) => return Err(error.into()),
                }
                open_beneath(current.as_fd(), folder, flags, Mode::empty())?
            }
            other => other?,
        };
        current = next;
    }
    Ok(current)
}

/// A new, empty temp file in `parent`, and its name there.
fn create_temp(parent: BorrowedFd<'_>) -> io::Result<(OsString, File)> {
    let mut last = io::Error::from(Errno::EEXIST);
    for _ in 0..16 {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.subsec_nanos());
        let count = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
        let name = OsString::from(format!(".elph-write-{}-{count}-{nanos:08x}", std::process::id()));
        match nix::fcntl::openat(
            parent,
            name.as_os_str(),
            OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::from_bits_truncate(0o666),
        ) {
            Ok(fd) => return Ok((name, File::from(fd))),
            Err(Errno::EEXIST) => last = io::Error::from(Errno::EEXIST),
            Err(error) => return Err(error.into()),
        }
    }
    Err(last)
}

fn fill(mut temp: File, bytes: &[u8], permissions: Option<u32>) -> io::Result<()> {
    temp.write_all(bytes)?;
    temp.sync_data()?;
    if let Some(mode) = permissions {
        temp.set_permissions(std::fs::Permissions::from_mode(mode))?;
    }
    Ok(())
}

/// Whether an I/O error means the path changed under the tool after it was judged: a symbolic link
/// now stands where the judged path had a folder or file (`ELOOP`), or the walk would leave the
/// root (`EXDEV`).
pub(crate) fn changed_under_us(error: &io::Error) -> bool {
    matches!(
        error.raw_os_error().map(Errno::from_raw),
        Some(Errno::ELOOP | Errno::EXDEV)
    )
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use super::*;

    fn tree() -> (tempfile::TempDir, PathBuf, HeldRoots) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("project/d")).unwrap();
        std::fs::create_dir_all(root.join("outside")).unwrap();
        let held = HeldRoots::holding([root.join("project").as_path()]);
        (dir, root, held)
    }

    #[test]
    fn writes_land_beneath_the_root_and_leave_no_temp_file() {
        let (_dir, root, held) = tree();
        let project = root.join("project");
        let place = Place::new(&held, &project, &project.join("d/new/deep.txt")).unwrap();
        assert!(!replace_file(&place, b"one", true).unwrap());
        assert!(replace_file(&place, b"two", true).unwrap());
        assert_eq!(
            std::fs::read_to_string(project.join("d/new/deep.txt")).unwrap(),
            "two"
        );
        let names: Vec<_> = std::fs::read_dir(project.join("d/new"))
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(names, ["deep.txt"]);
    }

    #[test]
    fn a_link_swapped_in_after_the_judgment_is_not_followed() {
        let (_dir, root, held) = tree();
        let project = root.join("project");
        let place = Place::new(&held, &project, &project.join("d/x.txt")).unwrap();
        std::fs::write(root.join("outside/x.txt"), "secret").unwrap();
        // The judged folder becomes a link out of the project.
        std::fs::rename(project.join("d"), project.join("d-moved")).unwrap();
        symlink(root.join("outside"), project.join("d")).unwrap();
        let error = replace_file(&place, b"pwned", false).unwrap_err();
        assert!(changed_under_us(&error), "{error}");
        let error = replace_file(&place, b"pwned", true).unwrap_err();
        assert!(changed_under_us(&error), "{error}");
        match open_regular(&place) {
            Err(OpenError::Io(error)) => assert!(changed_under_us(&error), "{error}"),
            other => panic!("opened through the link: {other:?}"),
        }
        assert!(open_dir(&Place::new(&held, &project, &project.join("d")).unwrap()).is_err());
        assert_eq!(
            std::fs::read_to_string(root.join("outside/x.txt")).unwrap(),
            "secret"
        );
        assert_eq!(std::fs::read_dir(root.join("outside")).unwrap().count(), 1);
    }

    #[test]
    fn a_link_at_the_name_is_replaced_not_written_through() {
        let (_dir, root, held) = tree();
        let project = root.join("project");
        std::fs::write(root.join("outside/target"), "keep").unwrap();
        symlink(root.join("outside/target"), project.join("d/name")).unwrap();
        let place = Place::new(&held, &project, &project.join("d/name")).unwrap();
        replace_file(&place, b"new", false).unwrap();
        assert_eq!(
            std::fs::read_to_string(root.join("outside/target")).unwrap(),
            "keep"
        );
        assert_eq!(std::fs::read_to_string(project.join("d/name")).unwrap(), "new");
        assert!(
            !std::fs::symlink_metadata(project.join("d/name"))
                .unwrap()
                .file_type()
                .is_symlink()
        );
    }

    #[test]
    fn the_held_root_is_used_after_its_path_is_renamed() {
        let (_dir, root, held) = tree();
        let project = root.join("project");
        let place = Place::new(&held, &project, &project.join("d/f")).unwrap();
        std::fs::rename(&project, root.join("elsewhere")).unwrap();
        std::fs::create_dir_all(project.join("d")).unwrap();
        replace_file(&place, b"x", false).unwrap();
        assert!(root.join("elsewhere/d/f").exists());
        assert!(!project.join("d/f").exists());
    }

    #[test]
    fn special_files_and_folders_are_not_opened_as_files() {
        let (_dir, root, held) = tree();
        let project = root.join("project");
        nix::unistd::mkfifo(&project.join("fifo"), Mode::S_IRWXU).unwrap();
        let fifo = Place::new(&held, &project, &project.join("fifo")).unwrap();
        assert!(matches!(open_regular(&fifo), Err(OpenError::Special)));
        let folder = Place::new(&held, &project, &project.join("d")).unwrap();
        assert!(matches!(open_regular(&folder), Err(OpenError::Directory)));
        let top = Place::new(&held, &project, &project).unwrap();
        assert!(matches!(open_regular(&top), Err(OpenError::Directory)));
        assert_eq!(is_dir(&top).unwrap(), Some(true));
        assert_eq!(is_dir(&fifo).unwrap(), Some(false));
        let dev = Place::new(&held, Path::new("/"), Path::new("/dev/null")).unwrap();
        assert!(matches!(open_regular(&dev), Err(OpenError::Special)));
        assert!(Place::new(&held, &project, &project.join("../outside")).is_err());
    }
}

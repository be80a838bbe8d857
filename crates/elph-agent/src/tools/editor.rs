//! The editor's file system: a front end whose client keeps files open (an ACP editor offering
//! `fs.readTextFile` / `fs.writeTextFile`) hands the native file tools an [`EditorFiles`], and
//! `read_file`, `write_file` and `edit_file` then read and write through it, so the model sees
//! unsaved buffers and the editor sees every change as it happens.
//!
//! Only the reading and writing moves: the file policy (protected places, the writable roots, the
//! paths judged before approval) is applied first, exactly as for the disk, and the editor is asked
//! about the real location the policy judged. Without an `EditorFiles` the tools use the disk.

use std::path::Path;

/// Reads and writes text files through the editor. Errors are messages for the model, in the
/// editor's words.
#[async_trait::async_trait]
pub trait EditorFiles: Send + Sync + std::fmt::Debug {
    /// Whether reads go through the editor.
    fn reads(&self) -> bool;
    /// Whether writes go through the editor.
    fn writes(&self) -> bool;
    /// The whole text of the file at `path` (absolute), as the editor has it (an unsaved buffer
    /// included).
    async fn read_text(&self, path: &Path) -> Result<String, String>;
    /// Makes `content` the whole text of the file at `path` (absolute).
    async fn write_text(&self, path: &Path, content: &str) -> Result<(), String>;
}

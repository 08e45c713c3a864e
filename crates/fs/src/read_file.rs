//! `read_file`: numbered lines of a text file, streamed, or an image as a
//! rich part, or a description of what cannot be shown.

use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::Path;

use gantry_core::{
    CancellationToken, Display, NotRegular, Part, Tier, Tool, ToolContext, ToolError, ToolResult,
    ToolSpec, Workspace,
};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::common::{blocking, counted, fenced, human_size, io_failure, quote};
use crate::sniff::{self, Kind, SNIFF_BYTES};

/// Lines shown when the call gives no `limit`: enough for most source
/// files in one call, few enough not to drown the context.
pub const DEFAULT_LIMIT: u64 = 2000;
/// Characters of one line shown before it is cut: minified code and data
/// dumps have megabyte-long lines that say nothing useful in full.
pub const MAX_LINE_CHARS: usize = 2000;
/// Largest image returned; bigger ones cost more context than they are
/// worth and several clients reject them.
pub const MAX_IMAGE_BYTES: u64 = 10_000_000;
/// Text returned by one call at most, whatever `limit` says: 2000 lines of
/// 2000 characters would be four million characters. Within the model's
/// budget for one result (256 KiB), with room for the notes after it.
pub const MAX_OUTPUT_BYTES: usize = 250 * 1024;
/// How far past the shown window the file is scanned to give the total
/// line count; past this the total is not counted, so reading the start of
/// a multi-gigabyte log stays instant.
const COUNT_BUDGET_BYTES: u64 = 64 * 1024 * 1024;
/// PDFs up to this size are scanned for their page count.
const PDF_SCAN_BYTES: u64 = 32_000_000;
/// Bytes of a line kept: enough for [`MAX_LINE_CHARS`] characters of up
/// to four bytes each.
const KEEP_LINE_BYTES: usize = MAX_LINE_CHARS * 4 + 4;
/// Line numbers listed in a note before "and N more".
const NOTE_LINES: usize = 10;

/// Parameters of [`ReadFile`].
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadFileParams {
    /// The file to read: a path relative to the workspace root (e.g.
    /// `src/main.rs`) or an absolute path inside the workspace.
    pub path: String,
    /// The first line to show, 1-based, as numbered in the output. Use it
    /// with `limit` to read a large file in parts: when output is cut, the
    /// result says which offset to use next. Defaults to 1.
    #[schemars(range(min = 1))]
    pub offset: Option<u64>,
    /// How many lines to show at most. Defaults to 2000. Lines longer than
    /// 2000 characters are cut.
    #[schemars(range(min = 1))]
    pub limit: Option<u64>,
}

/// Reads one file. Text comes back as numbered lines so the model can cite
/// and edit by line; images come back as image parts so a multimodal model
/// sees them; PDFs and binaries are described instead of dumped, because
/// their bytes would only fill the context with noise.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReadFile;

#[gantry_core::async_trait]
impl Tool for ReadFile {
    type Params = ReadFileParams;

    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "read_file",
            "Read file",
            Tier::Read,
            "Reads a file from the workspace. Text comes back with line numbers (like `cat -n`), \
             at most 2000 lines per call; when more remain, the result says so and gives the \
             `offset` to continue from. Lines over 2000 characters are cut. Images (PNG, JPEG, \
             GIF, WebP, BMP, up to 10 MB) come back as images. PDFs and binary files are \
             described, not shown. To list a directory use ls; to find files use glob.",
        )
    }

    fn describe(&self, params: &ReadFileParams) -> String {
        let from = params.offset.unwrap_or(1);
        match params.limit {
            Some(limit) => format!(
                "read {} lines {from}-{}",
                quote(&params.path),
                from.saturating_add(limit - 1)
            ),
            None if from > 1 => format!("read {} from line {from}", quote(&params.path)),
            None => format!("read {}", quote(&params.path)),
        }
    }

    async fn execute(
        &self,
        params: ReadFileParams,
        ctx: ToolContext,
    ) -> Result<ToolResult, ToolError> {
        let workspace = ctx.run.workspace().clone();
        let cancel = ctx.cancel.clone();
        let (path, result) = blocking(move || {
            let path = workspace.resolve(&params.path)?;
            let result = read(&workspace, &params, &path, &cancel);
            Ok((path, result))
        })
        .await?;
        if result.is_ok() {
            ctx.run.touch(&path);
        }
        result
    }
}

fn read(
    workspace: &Workspace,
    params: &ReadFileParams,
    path: &Path,
    cancel: &CancellationToken,
) -> Result<ToolResult, ToolError> {
    let shown = workspace.display(path);
    let failure = |e| io_failure(workspace, &params.path, path, e);
    let mut file = match workspace.open_file(path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::IsADirectory => {
            return Err(ToolError::failed(format!(
                "{} is a directory, not a file; use ls to list it (or glob to find files in it)",
                quote(&shown)
            )));
        }
        Err(e) => {
            if let Some(special) = NotRegular::of(&e) {
                return Ok(ToolResult::text(format!(
                    "{} is {}; its content is not read (reading it could wait forever or \
                     change its state). read_file reads regular files.",
                    quote(&shown),
                    special.kind
                )));
            }
            return Err(failure(e));
        }
    };
    let size = file.metadata().map_err(failure)?.len();
    let mut head = Vec::with_capacity(SNIFF_BYTES);
    (&mut file)
        .take(SNIFF_BYTES as u64)
        .read_to_end(&mut head)
        .map_err(failure)?;
    let whole = head.len() < SNIFF_BYTES;

    match sniff::classify(path, &head, whole) {
        Kind::Image(mime) => read_image(&shown, file, size, mime).map_err(|e| match e {
            ImageError::Io(e) => failure(e),
            ImageError::TooBig(message) => ToolError::Failed(message),
        }),
        Kind::Pdf => Ok(describe_pdf(&shown, file, size)),
        Kind::Binary { what, nul_at } => {
            let what = what.map(|w| format!(", {w}")).unwrap_or_default();
            Ok(ToolResult::text(format!(
                "{} is a binary file ({}{what}), not shown: it has a NUL byte at offset {nul_at}.",
                quote(&shown),
                human_size(size)
            )))
        }
        Kind::NotUtf8 { what, bad_at } => {
            let what = what.map(|w| format!(", {w}")).unwrap_or_default();
            Ok(ToolResult::text(format!(
                "{} is not UTF-8 text ({}{what}), not shown: the byte at offset {bad_at} is not \
                 valid UTF-8. It may be binary, or text in another encoding such as Latin-1 or \
                 UTF-16.",
                quote(&shown),
                human_size(size)
            )))
        }
        Kind::Text => {
            file.seek(SeekFrom::Start(0)).map_err(failure)?;
            let window = Window {
                offset: params.offset.unwrap_or(1),
                limit: params.limit.unwrap_or(DEFAULT_LIMIT),
            };
            read_text(&shown, file, size, window, cancel)
        }
    }
}

enum ImageError {
    Io(io::Error),
    TooBig(String),
}

fn read_image(shown: &str, file: File, size: u64, mime: &str) -> Result<ToolResult, ImageError> {
    if size > MAX_IMAGE_BYTES {
        return Err(ImageError::TooBig(format!(
            "{} is an image of {}; images over {} are not returned. Scale it down first \
             (e.g. `convert in.png -resize 50% out.png` with the shell tool) and read the copy",
            quote(shown),
            human_size(size),
            human_size(MAX_IMAGE_BYTES)
        )));
    }
    let data = read_whole(file).map_err(ImageError::Io)?;
    let dimensions = sniff::image_dimensions(&data)
        .map(|(w, h)| format!(", {w}x{h}"))
        .unwrap_or_default();
    let summary = format!(
        "{} ({mime}{dimensions}, {})",
        quote(shown),
        human_size(data.len() as u64)
    );
    Ok(ToolResult::new(
        vec![
            Part::text(format!("Image {summary}:")),
            Part::Image {
                mime_type: mime.to_string(),
                data,
            },
        ],
        Display::Markdown {
            markdown: format!("Read image {summary}"),
        },
    ))
}

/// The whole of an open file, from its start.
fn read_whole(mut file: File) -> io::Result<Vec<u8>> {
    file.seek(SeekFrom::Start(0))?;
    let mut data = Vec::new();
    file.read_to_end(&mut data)?;
    Ok(data)
}

fn describe_pdf(shown: &str, file: File, size: u64) -> ToolResult {
    let pages = if size <= PDF_SCAN_BYTES {
        read_whole(file)
            .ok()
            .and_then(|data| sniff::pdf_pages(&data))
    } else {
        None
    };
    let pages = match pages {
        Some(1) => ", 1 page".to_string(),
        Some(n) => format!(", {n} pages"),
        None => String::new(),
    };
    ToolResult::text(format!(
        "{} is a PDF document ({}{pages}); read_file cannot show its contents. \
         To get its text, run `pdftotext -layout {} -` with the shell tool, if it is available.",
        quote(shown),
        human_size(size),
        shell_quote(shown)
    ))
}

fn shell_quote(text: &str) -> String {
    if text
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "._-/+".contains(c))
    {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

#[derive(Debug, Clone, Copy)]
struct Window {
    offset: u64,
    limit: u64,
}

/// A line reader over a buffered file that never holds more than one cut
/// line in memory, so a single gigabyte-long line costs no more than a
/// short one, and that stops a line at [`LONG_LINE_SCAN_BYTES`] and
/// checks for cancellation at every buffer, so a file that is one endless
/// line (a sparse file's hole, a data dump) neither runs long nor ignores
/// a cancel.
struct Lines<'a, R> {
    inner: R,
    consumed: u64,
    cancel: &'a CancellationToken,
}

/// One line as read: its kept bytes are in the caller's buffer.
struct LineRead {
    /// Length of the line without its newline (as far as it was read).
    bytes: u64,
    /// The line went on past [`LONG_LINE_SCAN_BYTES`] and was not read to
    /// its end: nothing after it can be reached.
    endless: bool,
}

/// A line is read this far at most: past it, a call would spend seconds
/// on something that is not text anyone reads line by line.
const LONG_LINE_SCAN_BYTES: u64 = 64 * 1024 * 1024;

impl<R: BufRead> Lines<'_, R> {
    fn consume(&mut self, n: usize) {
        self.inner.consume(n);
        self.consumed += n as u64;
    }

    fn fill(&mut self) -> Result<&[u8], ToolError> {
        if self.cancel.is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        Ok(self.inner.fill_buf()?)
    }

    /// Skips one line; false at the end of the file, an error past a line
    /// too long to skip.
    fn skip(&mut self, number: u64) -> Result<bool, ToolError> {
        let mut any = false;
        let start = self.consumed;
        loop {
            if self.consumed - start > LONG_LINE_SCAN_BYTES {
                return Err(ToolError::failed(format!(
                    "line {number} is over {} long (no newline in it: a data dump, or a hole in \
                     a sparse file), so no line after it can be reached; look inside with grep, \
                     or with the shell tool (e.g. `tail -c`)",
                    human_size(LONG_LINE_SCAN_BYTES)
                )));
            }
            let (newline, len) = {
                let chunk = self.fill()?;
                (memchr::memchr(b'\n', chunk), chunk.len())
            };
            if len == 0 {
                return Ok(any);
            }
            any = true;
            match newline {
                Some(at) => {
                    self.consume(at + 1);
                    return Ok(true);
                }
                None => self.consume(len),
            }
        }
    }

    /// Reads one line, keeping at most `keep` bytes of it in `buf`
    /// (without the newline or a `\r` before it).
    fn next(&mut self, buf: &mut Vec<u8>, keep: usize) -> Result<Option<LineRead>, ToolError> {
        buf.clear();
        let mut bytes = 0u64;
        let mut any = false;
        let mut ended = false;
        while !ended {
            if bytes > LONG_LINE_SCAN_BYTES {
                return Ok(Some(LineRead {
                    bytes,
                    endless: true,
                }));
            }
            let used = {
                let chunk = self.fill()?;
                if chunk.is_empty() {
                    break;
                }
                any = true;
                let (part, used) = match memchr::memchr(b'\n', chunk) {
                    Some(at) => {
                        ended = true;
                        (&chunk[..at], at + 1)
                    }
                    None => (chunk, chunk.len()),
                };
                let room = keep.saturating_sub(buf.len());
                buf.extend_from_slice(&part[..part.len().min(room)]);
                bytes += part.len() as u64;
                used
            };
            self.consume(used);
        }
        if !any {
            return Ok(None);
        }
        if bytes as usize == buf.len() && buf.last() == Some(&b'\r') {
            buf.pop();
            bytes -= 1;
        }
        Ok(Some(LineRead {
            bytes,
            endless: false,
        }))
    }

    /// Whether anything is left to read.
    fn at_end(&mut self) -> Result<bool, ToolError> {
        Ok(self.fill()?.is_empty())
    }

    /// Counts the lines from here to the end of the file.
    fn count_rest(&mut self) -> Result<u64, ToolError> {
        let mut lines = 0;
        let mut partial = false;
        loop {
            let len = {
                let chunk = self.fill()?;
                if chunk.is_empty() {
                    break;
                }
                lines += memchr::memchr_iter(b'\n', chunk).count() as u64;
                partial = chunk.last() != Some(&b'\n');
                chunk.len()
            };
            self.consume(len);
        }
        Ok(lines + u64::from(partial))
    }
}

fn line_list(lines: &[u64]) -> String {
    let mut text = lines
        .iter()
        .take(NOTE_LINES)
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    if lines.len() > NOTE_LINES {
        text.push_str(&format!(" and {} more", lines.len() - NOTE_LINES));
    }
    text
}

fn read_text(
    shown: &str,
    file: File,
    size: u64,
    window: Window,
    cancel: &CancellationToken,
) -> Result<ToolResult, ToolError> {
    let mut lines = Lines {
        inner: BufReader::with_capacity(64 * 1024, file),
        consumed: 0,
        cancel,
    };
    if lines.fill()?.starts_with(b"\xef\xbb\xbf") {
        lines.consume(3);
    }

    // Skip to the window without keeping anything.
    for skipped in 1..window.offset {
        if !lines.skip(skipped)? {
            let total = skipped - 1;
            return Err(beyond_end(shown, window.offset, total));
        }
    }

    let mut out = String::new();
    let mut buf = Vec::with_capacity(KEEP_LINE_BYTES);
    let mut cut = Vec::new();
    let mut invalid = Vec::new();
    let mut number = window.offset;
    let mut budget_hit = false;
    // A line read but not shown because the output budget ran out.
    let mut held_back = 0;
    let mut at_end = false;
    let mut endless = None;
    while number - window.offset < window.limit {
        let Some(line) = lines.next(&mut buf, KEEP_LINE_BYTES)? else {
            at_end = true;
            break;
        };
        let text = match std::str::from_utf8(&buf) {
            Ok(text) => std::borrow::Cow::Borrowed(text),
            // The cut may split a character; only complain about real damage.
            Err(e) if e.error_len().is_none() && line.bytes as usize > buf.len() => {
                std::borrow::Cow::Borrowed(
                    std::str::from_utf8(&buf[..e.valid_up_to()]).unwrap_or(""),
                )
            }
            Err(_) => {
                invalid.push(number);
                String::from_utf8_lossy(&buf)
            }
        };
        // Written straight into the output, and taken back if it does
        // not fit: a line costs no allocation of its own.
        let start = out.len();
        let _ = write!(out, "{number:>6}\t");
        let whole = line.bytes as usize == buf.len();
        // Never more characters than bytes: only a long line is counted.
        let cut_at = if text.len() > MAX_LINE_CHARS {
            text.char_indices().nth(MAX_LINE_CHARS).map(|(at, _)| at)
        } else {
            None
        };
        match cut_at {
            None if whole => out.push_str(&text),
            at => {
                let end = at.unwrap_or(text.len());
                out.push_str(&text[..end]);
                let _ = write!(
                    out,
                    "… [line cut at {MAX_LINE_CHARS} characters; the whole line is {}{}]",
                    if line.endless { "over " } else { "" },
                    human_size(line.bytes)
                );
                cut.push(number);
            }
        }
        out.push('\n');
        if line.endless {
            endless = Some(number);
            if cut.last() == Some(&number) {
                cut.pop();
            }
        }
        if start > 0 && out.len() > MAX_OUTPUT_BYTES {
            out.truncate(start);
            budget_hit = true;
            held_back = 1;
            if cut.last() == Some(&number) {
                cut.pop();
            }
            if invalid.last() == Some(&number) {
                invalid.pop();
            }
            break;
        }
        number += 1;
        if endless.is_some() {
            break;
        }
    }
    let last = number - 1;
    if !at_end && held_back == 0 && endless.is_none() {
        at_end = lines.at_end()?;
    }

    if out.is_empty() && at_end {
        if window.offset == 1 {
            return Ok(ToolResult::text(format!(
                "{} is empty ({}).",
                quote(shown),
                human_size(size)
            )));
        }
        return Err(beyond_end(shown, window.offset, window.offset - 1));
    }

    let total = if at_end {
        Some(last)
    } else if endless.is_none() && size.saturating_sub(lines.consumed) <= COUNT_BUDGET_BYTES {
        Some(last + held_back + lines.count_rest()?)
    } else {
        None
    };
    let of_total = match total {
        Some(total) => format!("of {total}"),
        None => format!(
            "of a file of {} (more lines follow; the total was not counted)",
            human_size(size)
        ),
    };
    let range = format!("lines {}-{last} {of_total}", window.offset);

    let mut notes = Vec::new();
    if let Some(number) = endless {
        notes.push(format!(
            "line {number} is over {} long (no newline in it: a data dump, or a hole in a sparse \
             file); it is cut and the file is not read past it. Look further with grep, or with \
             the shell tool (e.g. `tail -c`)",
            human_size(LONG_LINE_SCAN_BYTES)
        ));
    } else if budget_hit {
        notes.push(format!(
            "output limit of {} reached: showing {range}; call again with offset {}",
            human_size(MAX_OUTPUT_BYTES as u64),
            last + 1
        ));
    } else if !at_end {
        notes.push(format!(
            "showing {range}; call again with offset {}",
            last + 1
        ));
    } else if window.offset > 1 {
        notes.push(format!("showing {range} (end of file)"));
    }
    if !cut.is_empty() {
        notes.push(format!(
            "line{} {} {} longer than {MAX_LINE_CHARS} characters and {} cut; use grep to search inside",
            if cut.len() == 1 { "" } else { "s" },
            line_list(&cut),
            if cut.len() == 1 { "was" } else { "were" },
            if cut.len() == 1 { "was" } else { "were" },
        ));
    }
    if !invalid.is_empty() {
        notes.push(format!(
            "line{} {} {} not valid UTF-8; bad bytes are shown as U+FFFD",
            if invalid.len() == 1 { "" } else { "s" },
            line_list(&invalid),
            if invalid.len() == 1 { "is" } else { "are" },
        ));
    }

    let mut text = out;
    for note in &notes {
        text.push_str(&format!("\n[{note}]"));
    }
    let markdown = format!("Read {} ({range})\n\n{}", quote(shown), fenced("", &text));
    Ok(ToolResult::new(
        vec![Part::text(text)],
        Display::Markdown { markdown },
    ))
}

fn beyond_end(shown: &str, offset: u64, total: u64) -> ToolError {
    if total == 0 {
        ToolError::failed(format!(
            "offset {offset} is beyond the end of {}: the file is empty",
            quote(shown)
        ))
    } else {
        ToolError::failed(format!(
            "offset {offset} is beyond the end of {}: it has {}; use an offset from 1 to {total}",
            quote(shown),
            counted(total, "line", "lines")
        ))
    }
}
